func.func @ffn_shapes(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<16x8xbf16>
  %u = gemma3n.weight "u" : tensor<16x8xbf16>
  %d = gemma3n.weight "d" : tensor<8x32xbf16>
  %y = gemma3n.ffn %x, %g, %u, %d {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x32xbf16>) -> tensor<8xf32>
  return
}
