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
    // expected-error @+1 {{still carries 'weight_shape'; run pccx-allocate-constants and pccx-allocate-l2 first}}
    pccx.gemv {dest_reg = 0, src_addr = 0, size_ptr_addr = 0, shape_ptr_addr = 0, weight_shape = [1, 1, 0]}
  }
}
