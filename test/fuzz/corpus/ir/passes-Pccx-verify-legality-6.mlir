pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 0, free = 1}
  pccx.segment @s {
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}
