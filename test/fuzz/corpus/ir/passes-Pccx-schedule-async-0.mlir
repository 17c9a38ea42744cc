pccx.program @p {
  pccx.segment @s {
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0}
    pccx.cvo {cvo_func = "gelu", src_addr = 0, dst_addr = 0, length = 8}
    pccx.host.kernel "mul" {params = {a = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, b = #pccx.region<offset = 1, elems = 8, rows = 1, stride = 1>, out = #pccx.region<offset = 2, elems = 8, rows = 1, stride = 1>}}
    pccx.host.kernel "mul" {params = {a = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, b = #pccx.region<offset = 1, elems = 8, rows = 1, stride = 1>, out = #pccx.region<offset = 2, elems = 8, rows = 1, stride = 1>}}
    pccx.memset {dest_cache = "fmap_shape", dest_addr = 0, a_value = 1, b_value = 1, c_value = 0}
  }
}
