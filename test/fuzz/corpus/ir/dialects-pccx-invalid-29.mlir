pccx.program @p {
  pccx.segment @s {
    pccx.gemv {src_addr = 0, size_ptr_addr = 1, shape_ptr_addr = 1}
  }
}
