pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "emit_logits" {params = {in = [1, 8, 1, 1], first_row = 0}}
  }
}
