pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 0, free = 1}
  pccx.segment @s {
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.0, shape_ptr_addr = 0}
  }
}
