func.func @tokens(%t: tensor<3xi32>) {
  %e = gemma3n.weight "e" : tensor<16x8xbf16>
  %x = gemma3n.embed %t, %e {scale = 1.0 : f32} : (tensor<3xi32>, tensor<16x8xbf16>) -> tensor<2x8xf32>
  return
}
