pccx.program @p {
  pccx.host.buffer @h.0 {words = 8, alloc = 0, free = 2}
  pccx.host.buffer @h.1 {words = 16, alloc = 1, free = 4}
  pccx.host.buffer @h.2 {words = 4, alloc = 3, free = 5}
  pccx.segment @s {
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.1, aux_addr_offset = 3, shape_ptr_addr = 0}
    pccx.host.kernel "combine" {params = {inputs = [#pccx.region<buffer = @h.1, offset = 0, elems = 8, rows = 2, stride = 1>, #pccx.region<buffer = @h.1, offset = 2, elems = 8, rows = 2, stride = 1>], out = #pccx.region<buffer = @h.2, offset = 2, elems = 8, rows = 2, stride = 1>, scale = 1.0}}
  }
}
