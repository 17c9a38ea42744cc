pccx.program @reuse {
  pccx.buffer @a {words = 16}
  pccx.buffer @b {words = 8}
  pccx.buffer @c {words = 16}
  pccx.buffer @unused {words = 4}
  pccx.segment @s {
    pccx.gemv {dest_reg = @b, src_addr = @a, size_ptr_addr = 0, shape_ptr_addr = 0}
    pccx.cvo {cvo_func = "gelu", src_addr = @b, dst_addr = @c, length = 8, dst_addr_offset = 3}
  }
}
