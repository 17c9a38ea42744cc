func.func @still_read(%xs: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>) {
  %g8 = gemma3n.weight "g8" : tensor<8xbf16>
  %rt = gemma3n.weight "router" : tensor<2x8xbf16>
  %pc = gemma3n.weight "prediction_coefs" : tensor<4x2xbf16>
  %cc = gemma3n.weight "correction_coefs" : tensor<2x2xbf16>
  %pred = gemma3n.altup.predict %xs, %g8, %rt, %pc {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<4x2xbf16>) -> tensor<2x8xf32>
  %act = gemma3n.altup.stream %pred[0] : (tensor<2x8xf32>) -> tensor<8xf32>
  %cor = gemma3n.altup.correct %pred, %act, %g8, %rt, %cc {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<2x2xbf16>) -> tensor<2x8xf32>
  %late = gemma3n.rms_norm %act, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  return %cor, %late : tensor<2x8xf32>, tensor<8xf32>
}
