func.func @residual(%act: tensor<8xf32>, %xn: tensor<8xf32>, %attn: tensor<8xf32>) -> tensor<8xf32> {
  %l = gemma3n.weight "left" : tensor<2x8xbf16>
  %r = gemma3n.weight "right" : tensor<8x2xbf16>
  %gl = gemma3n.weight "laurel_norm" : tensor<8xbf16>
  %ga = gemma3n.weight "post_attn" : tensor<8xbf16>
  %lau = gemma3n.laurel %xn, %l, %r, %gl {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<2x8xbf16>, tensor<8x2xbf16>, tensor<8xbf16>) -> tensor<8xf32>
  %an = gemma3n.rms_norm %attn, %ga {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %x = gemma3n.combine %act, %an, %lau {scale = 0.707106769 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %x : tensor<8xf32>
}
