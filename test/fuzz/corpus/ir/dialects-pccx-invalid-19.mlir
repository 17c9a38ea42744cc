pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 131000, elems = 800, rows = 1, stride = 100>, value = 1.0}}
  }
}
