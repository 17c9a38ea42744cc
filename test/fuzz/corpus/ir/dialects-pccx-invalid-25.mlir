pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.9, offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}
