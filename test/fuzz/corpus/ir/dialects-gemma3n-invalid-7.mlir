func.func @predict_coefs(%xs: tensor<2x8xf32>) {
  %g = gemma3n.weight "g" : tensor<8xbf16>
  %r = gemma3n.weight "r" : tensor<2x8xbf16>
  %c = gemma3n.weight "c" : tensor<2x2xbf16>
  %y = gemma3n.altup.predict %xs, %g, %r, %c {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<2x2xbf16>) -> tensor<2x8xf32>
  return
}
