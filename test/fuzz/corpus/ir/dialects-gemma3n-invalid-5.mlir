func.func @ffn_sparsity(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<16x8xbf16>
  %d = gemma3n.weight "d" : tensor<8x16xbf16>
  %y = gemma3n.ffn %x, %g, %g, %d {sparsity = 1.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return
}
