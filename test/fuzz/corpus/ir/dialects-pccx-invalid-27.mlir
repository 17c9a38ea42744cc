pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 3, free = 3}
}
