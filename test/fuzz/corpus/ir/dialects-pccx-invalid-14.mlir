pccx.program @p {
  pccx.segment @s {
    pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 0, length = 4, patches = [#pccx.patch<field = "length", source = "time">]}
  }
}
