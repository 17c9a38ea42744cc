pccx.program @pending {
  pccx.segment @s {
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, weight_shape = #pccx.shape<1, 1, 0>}
  }
}
