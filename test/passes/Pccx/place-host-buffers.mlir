// RUN: pccx-opt %s --pccx-place-host-buffers --split-input-file --verify-diagnostics | FileCheck %s

// Events in order: h.0 alloc, h.1 alloc, h.0 free, h.2 alloc (reuses h.0's
// words), h.1 free, h.2 free. MEMCPY addresses and host-kernel regions
// become window words; the high-water mark is recorded.
// CHECK-LABEL: pccx.program @p attributes {window_words = 24 : i64}
// CHECK: pccx.host.buffer @h.0 {address = 0 : i64, alloc = 0 : i64, free = 2 : i64, words = 8 : i64}
// CHECK: pccx.host.buffer @h.1 {address = 8 : i64, alloc = 1 : i64, free = 4 : i64, words = 16 : i64}
// CHECK: pccx.host.buffer @h.2 {address = 0 : i64, alloc = 3 : i64, free = 5 : i64, words = 4 : i64}
// CHECK: pccx.memcpy {aux_addr = 11 : i64, dest_addr = 0 : i64, shape_ptr_addr = 0 : i64, src_addr = 0 : i64, to_device}
// CHECK: pccx.host.kernel "combine" {params = {inputs = [#pccx.region<offset = 8, elems = 8, rows = 2, stride = 1>, #pccx.region<offset = 10, elems = 8, rows = 2, stride = 1>], out = #pccx.region<offset = 2, elems = 8, rows = 2, stride = 1>, scale = 1.000000e+00 : f64}}
pccx.program @p {
  pccx.host.buffer @h.0 {words = 8, alloc = 0, free = 2}
  pccx.host.buffer @h.1 {words = 16, alloc = 1, free = 4}
  pccx.host.buffer @h.2 {words = 4, alloc = 3, free = 5}
  pccx.segment @s {
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.1, aux_addr_offset = 3, shape_ptr_addr = 0}
    pccx.host.kernel "combine" {params = {inputs = [#pccx.region<buffer = @h.1, offset = 0, elems = 8, rows = 2, stride = 1>, #pccx.region<buffer = @h.1, offset = 2, elems = 8, rows = 2, stride = 1>], out = #pccx.region<buffer = @h.2, offset = 2, elems = 8, rows = 2, stride = 1>, scale = 1.0}}
  }
}

// -----

// Live buffers that do not fit the window are an error naming the buffer.
pccx.program @p {
  pccx.host.buffer @h.0 {words = 100000, alloc = 0, free = 3}
  // expected-error @+1 {{needs 40000 host-window words while 1 live buffers hold 100000 of the 131072 words; the program does not fit the host window}}
  pccx.host.buffer @h.1 {words = 40000, alloc = 1, free = 2}
}

// -----

pccx.program @p {
  pccx.host.buffer @h.0 {words = 1, alloc = 0, free = 1}
  // expected-error @+1 {{shares allocation event 1 with @h.0; every event must have its own ordinal}}
  pccx.host.buffer @h.1 {words = 1, alloc = 1, free = 2}
}
