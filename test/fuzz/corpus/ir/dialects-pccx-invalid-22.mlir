pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>}}
  }
}
