pccx.program @p {
  pccx.segment @s {
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = 131072, shape_ptr_addr = 0}
  }
}
