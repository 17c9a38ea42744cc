pccx.program @symbolic {
  pccx.buffer @x {words = 8}
  pccx.segment @s {
    pccx.gemv {dest_reg = @x, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0}
  }
}
