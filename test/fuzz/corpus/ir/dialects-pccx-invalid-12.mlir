pccx.program @p {
  pccx.buffer @b {words = 4}
  pccx.segment @s {
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = @b, shape_ptr_addr = 0}
  }
}
