// RUN: pccx-opt %s | FileCheck %s
// RUN: pccx-opt %s | pccx-opt | FileCheck %s
// RUN: pccx-opt %s --mlir-print-op-generic | pccx-opt | FileCheck %s

// A module names its target by the row name of hw/machine/Targets.def.
// CHECK: module attributes {pccx.target = #pccx.target<"v002-rtl">}
module attributes {pccx.target = #pccx.target<"v002-rtl">} {
  // CHECK: pccx.program @p
  pccx.program @p {
    pccx.segment @s {
      pccx.memset {dest_cache = "weight_shape", dest_addr = 2, a_value = 8, b_value = 8, c_value = 0}
    }
  }
}
