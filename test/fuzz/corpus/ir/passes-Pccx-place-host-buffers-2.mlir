pccx.program @p {
  pccx.host.buffer @h.0 {words = 1, alloc = 0, free = 1}
  pccx.host.buffer @h.1 {words = 1, alloc = 1, free = 2}
}
