pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "cache_write" {params = {rows = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, cache = 3}}
  }
}
