pccx.program @p {
  pccx.segment @s {
    pccx.memset {dest_cache = "fmap_shape", dest_addr = -1, a_value = 0, b_value = 0, c_value = 0}
  }
}
