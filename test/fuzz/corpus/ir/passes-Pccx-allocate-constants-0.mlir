pccx.program @reuse {
  pccx.segment @layer.0 {
    pccx.gemv {dest_reg = 8, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
    pccx.gemv {dest_reg = 16, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 8, aux_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<8, 1, 8>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, findemax, weight_shape = #pccx.shape<16, 1, 0>, fmap_shape = #pccx.shape<1, 1, 2>, shape_patches = [#pccx.patch<field = "a_value", source = "attn_len", bank = "weight_shape">]}
  }
  pccx.segment @layer.1 {
    pccx.gemv {dest_reg = 8, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
  }
}
