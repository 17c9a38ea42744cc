func.func @also_used_directly(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %g = gemma3n.weight "input_ln" : tensor<8xbf16>
  %wg = gemma3n.weight "gate" : tensor<16x8xbf16>
  %wd = gemma3n.weight "down" : tensor<8x16xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %f = gemma3n.ffn %h, %wg, %wg, %wd {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return %f, %h : tensor<8xf32>, tensor<8xf32>
}
