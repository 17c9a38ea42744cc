func.func @collapse(%xs: tensor<4x8xf32>) {
  %p = gemma3n.weight "p" : tensor<8x8xbf16>
  %y = gemma3n.altup.collapse %xs, %p : (tensor<4x8xf32>, tensor<8x8xbf16>) -> tensor<8xf32>
  return
}
