// RUN: pccx-opt %s --pccx-verify-legality --split-input-file --verify-diagnostics

// A fully allocated program passes.
pccx.program @ok {
  pccx.segment @s {
    pccx.gemv {dest_reg = 0, src_addr = 8, size_ptr_addr = 1, shape_ptr_addr = 2, w_scale}
  }
}

// -----

pccx.program @symbolic {
  pccx.buffer @x {words = 8}
  pccx.segment @s {
    // expected-error @+1 {{field 'dest_reg' is the unallocated buffer @x; run L2 allocation before encoding}}
    pccx.gemv {dest_reg = @x, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0}
  }
}

// -----

pccx.program @pending {
  pccx.segment @s {
    // expected-error @+1 {{still carries 'weight_shape'; run pccx-allocate-constants, pccx-place-host-buffers and pccx-allocate-l2 first}}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, weight_shape = #pccx.shape<1, 1, 0>}
  }
}

// -----

// A host kernel right after an instruction needs a sync in between.
pccx.program @p {
  pccx.segment @s {
    // expected-note @+1 {{the instruction}}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0, async}
    // expected-error @+1 {{runs after an instruction with no pccx.host.sync in between; run pccx-schedule-async}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}

// -----

// With the sync (and at the start of a segment) host work is legal.
pccx.program @p {
  pccx.segment @s {
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0, async}
    pccx.host.sync
    pccx.host.kernel "fill" {params = {out = #pccx.region<offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}

// -----

// Host-window space must be placed before encoding.
pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 0, free = 1}
  pccx.segment @s {
    // expected-error @+1 {{field 'aux_addr' is the unallocated buffer @h.0; run host-buffer placement before encoding}}
    pccx.memcpy {to_device, dest_addr = 0, src_addr = 0, aux_addr = @h.0, shape_ptr_addr = 0}
  }
}

// -----

pccx.program @p {
  pccx.host.buffer @h.0 {words = 4, alloc = 0, free = 1}
  pccx.segment @s {
    // expected-error @+1 {{uses the unplaced host buffer @h.0; run pccx-place-host-buffers first}}
    pccx.host.kernel "fill" {params = {out = #pccx.region<buffer = @h.0, offset = 0, elems = 8, rows = 1, stride = 1>, value = 1.0}}
  }
}

// -----

// The module's target decides what may run: v002-rtl has no GEMV result
// path; its GEMM and CVO do not compute the documented results; its CVO
// vectors are at most 2048 long; and it has no L2-to-L2 MEMCPY.
module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      // expected-error @+1 {{cannot run on target v002-rtl: target v002-rtl has no GEMV result write-back path (a GEMV result cannot reach L2)}}
      pccx.gemv {dest_reg = 0, src_addr = 8, size_ptr_addr = 1, shape_ptr_addr = 2, w_scale}
    }
  }
}

// -----

module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      // expected-error @+1 {{cannot run on target v002-rtl: the v002-rtl GEMM stores four words of zeros}}
      pccx.gemm {dest_reg = 0, src_addr = 8, size_ptr_addr = 1, shape_ptr_addr = 2}
    }
  }
}

// -----

module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      // expected-error @+1 {{cannot run on target v002-rtl: length 2049 exceeds the 2048 elements of a CVO on target v002-rtl}}
      pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 2048, length = 2049}
    }
  }
}

// -----

module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      // expected-error @+1 {{cannot run on target v002-rtl: the v002-rtl CVO runs with the previous CVO's parameters}}
      pccx.cvo {cvo_func = "exp", src_addr = 0, dst_addr = 2048, length = 16}
    }
  }
}

// -----

module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      // expected-error @+1 {{cannot run on target v002-rtl: target v002-rtl has no L2-to-L2 MEMCPY (from_device = to_device = 0 copies L2 to the host window)}}
      pccx.memcpy {dest_addr = 16, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0}
    }
  }
}

// -----

// What the v002-rtl target runs as documented passes: MEMSET and a
// host-to-L2 MEMCPY (the same words on v002, with no target recorded, too).
module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  pccx.program @p {
    pccx.segment @s {
      pccx.memset {dest_cache = "fmap_shape", dest_addr = 0, a_value = 8, b_value = 1, c_value = 8}
      pccx.memcpy {from_device, dest_addr = 16, src_addr = 0, aux_addr = 0, shape_ptr_addr = 0}
    }
  }
}
