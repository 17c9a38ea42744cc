pccx.program @p {
  pccx.host.buffer @h.0 {words = 100000, alloc = 0, free = 3}
  pccx.host.buffer @h.1 {words = 40000, alloc = 1, free = 2}
}
