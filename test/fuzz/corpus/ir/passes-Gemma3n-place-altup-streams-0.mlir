func.func @layer(%x: tensor<8xf32>, %pli: tensor<1x4xf32>) -> tensor<2x8xf32> {
  %ap = gemma3n.weight "altup_proj" : tensor<8x8xbf16>
  %g8 = gemma3n.weight "g8" : tensor<8xbf16>
  %rt = gemma3n.weight "router" : tensor<2x8xbf16>
  %pc = gemma3n.weight "prediction_coefs" : tensor<4x2xbf16>
  %cc = gemma3n.weight "correction_coefs" : tensor<2x2xbf16>
  %pg = gemma3n.weight "per_layer_input_gate" : tensor<4x8xbf16>
  %pp = gemma3n.weight "per_layer_projection" : tensor<8x4xbf16>
  %xs = gemma3n.altup.init %x, %ap : (tensor<8xf32>, tensor<8x8xbf16>) -> tensor<2x8xf32>
  %pred = gemma3n.altup.predict %xs, %g8, %rt, %pc {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<4x2xbf16>) -> tensor<2x8xf32>
  %act = gemma3n.altup.stream %pred[0] : (tensor<2x8xf32>) -> tensor<8xf32>
  %out = gemma3n.rms_norm %act, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %cor = gemma3n.altup.correct %pred, %out, %g8, %rt, %cc {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<2x2xbf16>) -> tensor<2x8xf32>
  %next = gemma3n.ple_inject %cor, %pli, %pg, %pp, %g8 {layer = 0, active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<1x4xf32>, tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<8xbf16>) -> tensor<2x8xf32>
  return %next : tensor<2x8xf32>
}
