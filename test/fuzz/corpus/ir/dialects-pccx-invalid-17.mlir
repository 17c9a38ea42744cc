pccx.program @p {
  pccx.buffer @b {words = 100, address = 114600}
}
