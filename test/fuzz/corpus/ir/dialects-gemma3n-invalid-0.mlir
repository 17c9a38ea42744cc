func.func @bad_gain(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<4xbf16>
  %y = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<4xbf16>) -> tensor<8xf32>
  return
}
