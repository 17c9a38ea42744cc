pccx.program @decode attributes {kind = "decode"} {
  pccx.buffer @x {words = 256}
  pccx.buffer @y {words = 2048, address = 1024}
  pccx.segment @layer0 attributes {weight_bytes = 4096} {
    pccx.memset {dest_cache = "weight_shape", dest_addr = 2, a_value = 2048, b_value = 2048, c_value = 0}
    pccx.gemv {dest_reg = @y, src_addr = @x, size_ptr_addr = 1, shape_ptr_addr = 2, w_scale, findemax}
    pccx.gemm {dest_reg = 114687, src_addr = 0, size_ptr_addr = 63, shape_ptr_addr = 0, parallel_lane = 4, accm}
    pccx.cvo {cvo_func = "exp", src_addr = 10, dst_addr = 20, length = 2048, sub_emax, async}
    pccx.cvo {cvo_func = "scale", src_addr = 0, dst_addr = 0, length = 1, recip_scale}
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = 12, shape_ptr_addr = 3, patches = [#pccx.patch<field = "aux_addr", source = "position", scale = 4, offset = 0>]}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = @y, aux_addr = 0, shape_ptr_addr = 3}
    pccx.host.kernel "mul" {params = {a = #pccx.region<offset = 0, elems = 256, rows = 1, stride = 32>, b = #pccx.region<offset = 32, elems = 256, rows = 1, stride = 32>, out = #pccx.region<offset = 256, elems = 256, rows = 1, stride = 32>}}
    pccx.host.sync
  }
}

pccx.program @symbolic {
  pccx.host.buffer @h.0 {words = 16, alloc = 0, free = 1}
  pccx.segment @s {
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.0, aux_addr_offset = 8, shape_ptr_addr = 0}
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 8, elems = 64, rows = 1, stride = 8>, value = 1.0 : f64}}
  }
}

pccx.program @empty {
}
