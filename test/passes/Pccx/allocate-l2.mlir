// RUN: pccx-opt %s --pccx-allocate-l2 --split-input-file --verify-diagnostics | FileCheck %s

// Buffers whose lifetimes do not overlap share words; symbolic addresses
// (plus their word offsets) become numbers; unused buffers disappear.
// CHECK-LABEL: pccx.program @reuse
// CHECK-DAG: pccx.buffer @a {address = 0 : i64, words = 16 : i64}
// CHECK-DAG: pccx.buffer @b {address = 16 : i64, words = 8 : i64}
// CHECK-DAG: pccx.buffer @c {address = 0 : i64, words = 16 : i64}
// CHECK-NOT: pccx.buffer @unused
pccx.program @reuse {
  pccx.buffer @a {words = 16}
  pccx.buffer @b {words = 8}
  pccx.buffer @c {words = 16}
  pccx.buffer @unused {words = 4}
  pccx.segment @s {
    // CHECK: pccx.gemv {dest_reg = 16 : i64, shape_ptr_addr = 0 : i64, size_ptr_addr = 0 : i64, src_addr = 0 : i64}
    pccx.gemv {dest_reg = @b, src_addr = @a, size_ptr_addr = 0, shape_ptr_addr = 0}
    // @a is dead: @c takes its words.
    // CHECK: pccx.cvo {cvo_func = "gelu", dst_addr = 3 : i64, length = 8 : i64, src_addr = 16 : i64}
    pccx.cvo {cvo_func = "gelu", src_addr = @b, dst_addr = @c, length = 8, dst_addr_offset = 3}
  }
}

// -----

// A program that cannot fit: two live buffers of 60000 words.
pccx.program @toobig {
  pccx.buffer @x {words = 60000}
  // expected-error @+1 {{'pccx.buffer' op needs 60000 L2 words while 1 live buffers hold 60000 of the 114688 words; the program does not fit the L2}}
  pccx.buffer @y {words = 60000}
  pccx.segment @s {
    pccx.gemv {dest_reg = @y, src_addr = @x, size_ptr_addr = 0, shape_ptr_addr = 0}
  }
}
