func.func @untied_head(%x: tensor<8xf32>) -> tensor<32xf32> {
  %g = gemma3n.weight "norm" : tensor<8xbf16>
  %t = gemma3n.weight "lm_head.weight" : tensor<32x8xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %l = gemma3n.lm_head %h, %t : (tensor<8xf32>, tensor<32x8xbf16>) -> tensor<32xf32>
  return %l : tensor<32xf32>
}
