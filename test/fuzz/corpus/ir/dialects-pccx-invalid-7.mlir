pccx.program @p {
  pccx.segment @s {
    pccx.memset {dest_cache = "scale", dest_addr = 0, a_value = 0, b_value = 0, c_value = 0}
  }
}
