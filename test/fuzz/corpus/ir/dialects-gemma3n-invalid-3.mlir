func.func @later_cache(%x: tensor<8xf32>, %p: tensor<1xi32>, %c: tensor<8x4xf32>) {
  %q = gemma3n.weight "q" : tensor<8x8xbf16>
  %n = gemma3n.weight "n" : tensor<4xbf16>
  %o = gemma3n.weight "o" : tensor<8x8xbf16>
  %a = gemma3n.attention %x, %p, %q, %n, %o, %c, %c {layer = 2, kv_layer = 3, num_heads = 2, num_kv_heads = 1, head_dim = 4, rope_theta = 1.0e4, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<4xbf16>, tensor<8x8xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}
