pccx.program @toobig {
  pccx.buffer @x {words = 60000}
  pccx.buffer @y {words = 60000}
  pccx.segment @s {
    pccx.gemv {dest_reg = @y, src_addr = @x, size_ptr_addr = 0, shape_ptr_addr = 0}
  }
}
