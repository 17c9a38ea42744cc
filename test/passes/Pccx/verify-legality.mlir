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
