pccx.program @p {
  pccx.segment @s {
    pccx.gemm {dest_reg = 0, src_addr = 114688, size_ptr_addr = 1, shape_ptr_addr = 1}
  }
}
