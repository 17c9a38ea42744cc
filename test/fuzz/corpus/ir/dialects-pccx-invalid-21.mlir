pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "rms_square"
  }
}
