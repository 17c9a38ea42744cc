// RUN: pccx-opt %s | FileCheck %s
// RUN: pccx-opt %s | pccx-opt | FileCheck %s
// RUN: pccx-opt %s --mlir-print-op-generic | pccx-opt | FileCheck %s

// CHECK-LABEL: pccx.program @decode attributes {kind = "decode"}
pccx.program @decode attributes {kind = "decode"} {
  // CHECK: pccx.buffer @x {words = 256 : i64}
  pccx.buffer @x {words = 256}
  // CHECK: pccx.buffer @y {address = 1024 : i64, words = 2048 : i64}
  pccx.buffer @y {words = 2048, address = 1024}
  // CHECK: pccx.segment @layer0 attributes {weight_bytes = 4096 : i64}
  pccx.segment @layer0 attributes {weight_bytes = 4096} {
    // CHECK: pccx.memset {a_value = 2048 : i64, b_value = 2048 : i64, c_value = 0 : i64, dest_addr = 2 : i64, dest_cache = "weight_shape"}
    pccx.memset {dest_cache = "weight_shape", dest_addr = 2, a_value = 2048, b_value = 2048, c_value = 0}
    // CHECK: pccx.gemv {dest_reg = @y, findemax, shape_ptr_addr = 2 : i64, size_ptr_addr = 1 : i64, src_addr = @x, w_scale}
    pccx.gemv {dest_reg = @y, src_addr = @x, size_ptr_addr = 1, shape_ptr_addr = 2, w_scale, findemax}
    // CHECK: pccx.gemm {accm, dest_reg = 114687 : i64, parallel_lane = 4 : i64
    pccx.gemm {dest_reg = 114687, src_addr = 0, size_ptr_addr = 63, shape_ptr_addr = 0, parallel_lane = 4, accm}
    // CHECK: pccx.cvo {async, cvo_func = "exp", dst_addr = 20 : i64, length = 2048 : i64, src_addr = 10 : i64, sub_emax}
    pccx.cvo {cvo_func = "exp", src_addr = 10, dst_addr = 20, length = 2048, sub_emax, async}
    // CHECK: pccx.cvo {cvo_func = "scale", dst_addr = 0 : i64, length = 1 : i64, recip_scale, src_addr = 0 : i64}
    pccx.cvo {cvo_func = "scale", src_addr = 0, dst_addr = 0, length = 1, recip_scale}
    // CHECK: pccx.memcpy {aux_addr = 12 : i64, dest_addr = 0 : i64, from_device, patches = [#pccx.patch<field = "aux_addr", source = "position", scale = 4>], shape_ptr_addr = 3 : i64, src_addr = 0 : i64}
    pccx.memcpy {from_device, dest_addr = 0, src_addr = 0, aux_addr = 12, shape_ptr_addr = 3, patches = [#pccx.patch<field = "aux_addr", source = "position", scale = 4, offset = 0>]}
    // CHECK: pccx.memcpy {aux_addr = 0 : i64, dest_addr = 0 : i64, shape_ptr_addr = 3 : i64, src_addr = @y, to_device}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = @y, aux_addr = 0, shape_ptr_addr = 3}
    // CHECK: pccx.host.kernel "mul" {params = {a = #pccx.region<offset = 0, elems = 256, rows = 1, stride = 32>, b = #pccx.region<offset = 32, elems = 256, rows = 1, stride = 32>, out = #pccx.region<offset = 256, elems = 256, rows = 1, stride = 32>}}
    pccx.host.kernel "mul" {params = {a = #pccx.region<offset = 0, elems = 256, rows = 1, stride = 32>, b = #pccx.region<offset = 32, elems = 256, rows = 1, stride = 32>, out = #pccx.region<offset = 256, elems = 256, rows = 1, stride = 32>}}
    // CHECK: pccx.host.sync
    pccx.host.sync
  }
}

// Host-window space stays symbolic until placement: a host buffer with its
// lifetime in allocation events, MEMCPYs and regions naming it.
// CHECK-LABEL: pccx.program @symbolic
pccx.program @symbolic {
  // CHECK: pccx.host.buffer @h.0 {alloc = 0 : i64, free = 1 : i64, words = 16 : i64}
  pccx.host.buffer @h.0 {words = 16, alloc = 0, free = 1}
  pccx.segment @s {
    // CHECK: pccx.memcpy {aux_addr = @h.0, aux_addr_offset = 8 : i64, dest_addr = 0 : i64, shape_ptr_addr = 0 : i64, src_addr = 0 : i64, to_device}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.0, aux_addr_offset = 8, shape_ptr_addr = 0}
    // CHECK: pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 8, elems = 64, rows = 1, stride = 8>, value = 1.000000e+00 : f64}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 8, elems = 64, rows = 1, stride = 8>, value = 1.0 : f64}}
  }
}

// CHECK-LABEL: pccx.program @empty
pccx.program @empty {
}
