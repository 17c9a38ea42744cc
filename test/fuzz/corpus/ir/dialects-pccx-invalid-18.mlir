pccx.program @p {
  pccx.buffer @b {words = 0}
}
