pccx.program @ok {
  pccx.segment @s {
    pccx.gemv {dest_reg = 0, src_addr = 8, size_ptr_addr = 1, shape_ptr_addr = 2, w_scale}
  }
}
