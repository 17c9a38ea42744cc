func.func @tied_head(%tok: tensor<1xi32>, %x: tensor<8xf32>) -> (tensor<32xf32>, tensor<8xf32>) {
  %g = gemma3n.weight "norm" : tensor<8xbf16>
  %t = gemma3n.weight "embed" : tensor<32x8xbf16>
  %e = gemma3n.embed %tok, %t {scale = 1.0 : f32} : (tensor<1xi32>, tensor<32x8xbf16>) -> tensor<8xf32>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %l = gemma3n.lm_head %h, %t : (tensor<8xf32>, tensor<32x8xbf16>) -> tensor<32xf32>
  return %l, %e : tensor<32xf32>, tensor<8xf32>
}
