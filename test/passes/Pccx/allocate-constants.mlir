// RUN: pccx-opt %s --pccx-allocate-constants --split-input-file --verify-diagnostics | FileCheck %s

// Shapes load once and are reused; a patched shape gets its own MEMSET
// carrying the patch.
// CHECK-LABEL: pccx.program @reuse
pccx.program @reuse {
  pccx.segment @layer.0 {
    // CHECK:      pccx.memset {a_value = 64 : i64, b_value = 32 : i64, c_value = 0 : i64, dest_addr = 0 : i64, dest_cache = "weight_shape"}
    // CHECK-NEXT: pccx.memset {a_value = 1 : i64, b_value = 4 : i64, c_value = 8 : i64, dest_addr = 0 : i64, dest_cache = "fmap_shape"}
    // CHECK-NEXT: pccx.gemv {dest_reg = 8 : i64, shape_ptr_addr = 0 : i64, size_ptr_addr = 0 : i64, src_addr = 0 : i64, w_scale}
    pccx.gemv {dest_reg = 8, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
    // Same shapes: no MEMSET.
    // CHECK-NEXT: pccx.gemv {dest_reg = 16 : i64, shape_ptr_addr = 0 : i64, size_ptr_addr = 0 : i64, src_addr = 0 : i64, w_scale}
    pccx.gemv {dest_reg = 16, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
    // A MEMCPY's extent lives in the fmap bank too.
    // CHECK-NEXT: pccx.memset {a_value = 8 : i64, b_value = 1 : i64, c_value = 8 : i64, dest_addr = 1 : i64, dest_cache = "fmap_shape"}
    // CHECK-NEXT: pccx.memcpy {aux_addr = 0 : i64, dest_addr = 0 : i64, shape_ptr_addr = 1 : i64, src_addr = 8 : i64, to_device}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 8, aux_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<8, 1, 8>}
    // A run-time shape: its own entry and MEMSET with the patch; the GEMV
    // keeps nothing of the shape attributes.
    // CHECK-NEXT: pccx.memset {a_value = 16 : i64, b_value = 1 : i64, c_value = 0 : i64, dest_addr = 1 : i64, dest_cache = "weight_shape", patches = [#pccx.patch<field = "a_value", source = "attn_len">]}
    // CHECK-NEXT: pccx.memset {a_value = 1 : i64, b_value = 1 : i64, c_value = 2 : i64, dest_addr = 2 : i64, dest_cache = "fmap_shape"}
    // CHECK-NEXT: pccx.gemv {dest_reg = 0 : i64, findemax, shape_ptr_addr = 1 : i64, size_ptr_addr = 2 : i64, src_addr = 0 : i64, w_scale}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, findemax, weight_shape = #pccx.shape<16, 1, 0>, fmap_shape = #pccx.shape<1, 1, 2>, shape_patches = [#pccx.patch<field = "a_value", source = "attn_len", bank = "weight_shape">]}
  }
  // The next layer finds its shapes resident.
  // CHECK-LABEL: pccx.segment @layer.1
  // CHECK-NEXT: pccx.gemv {dest_reg = 8 : i64, shape_ptr_addr = 0 : i64, size_ptr_addr = 0 : i64
  pccx.segment @layer.1 {
    pccx.gemv {dest_reg = 8, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, w_scale, weight_shape = #pccx.shape<64, 32, 0>, fmap_shape = #pccx.shape<1, 4, 8>}
  }
}

// -----

// With more distinct shapes than the 64 entries, the least recently used
// entry is reloaded: 65 shapes, then the first again.
// CHECK-LABEL: pccx.program @evict
// CHECK-COUNT-65: pccx.memset {{.*}}dest_cache = "weight_shape"
// CHECK:      pccx.memset {a_value = 1 : i64, b_value = 1 : i64, c_value = 0 : i64, dest_addr = 1 : i64, dest_cache = "weight_shape"}
// CHECK-NEXT: pccx.gemv {dest_reg = 0 : i64, shape_ptr_addr = 1 : i64
pccx.program @evict {
  pccx.segment @s {
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<1, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<2, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<3, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<4, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<5, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<6, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<7, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<8, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<9, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<10, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<11, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<12, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<13, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<14, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<15, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<16, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<17, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<18, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<19, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<20, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<21, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<22, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<23, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<24, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<25, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<26, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<27, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<28, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<29, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<30, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<31, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<32, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<33, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<34, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<35, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<36, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<37, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<38, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<39, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<40, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<41, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<42, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<43, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<44, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<45, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<46, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<47, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<48, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<49, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<50, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<51, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<52, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<53, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<54, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<55, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<56, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<57, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<58, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<59, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<60, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<61, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<62, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<63, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<64, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<65, 1, 0>}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 0, 0>, weight_shape = #pccx.shape<1, 1, 0>}
  }
}

// -----

pccx.program @bad {
  pccx.segment @s {
    // expected-error @+1 {{shape value 70000 does not fit a 16-bit shape field}}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, fmap_shape = #pccx.shape<1, 70000, 0>, weight_shape = #pccx.shape<1, 1, 0>}
  }
}
