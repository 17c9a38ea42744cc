pccx.program @p {
  pccx.segment @s {
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1, parallel_lane = 5}
  }
}
