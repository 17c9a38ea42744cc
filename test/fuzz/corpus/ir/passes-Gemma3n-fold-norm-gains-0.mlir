func.func @ffn_input(%x: tensor<8xf32>) -> tensor<8xf32> {
  %g = gemma3n.weight "pre_ff" : tensor<8xbf16>
  %wg = gemma3n.weight "gate" : tensor<16x8xbf16>
  %wu = gemma3n.weight "up" : tensor<16x8xbf16>
  %wd = gemma3n.weight "down" : tensor<8x16xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %f = gemma3n.ffn %h, %wg, %wu, %wd {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return %f : tensor<8xf32>
}
