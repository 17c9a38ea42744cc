pccx.program @p {
  pccx.segment @s {
    pccx.cvo {cvo_func = "exp", src_addr = @nowhere, dst_addr = 0, length = 4}
  }
}
