// RUN: pccx-opt %s | FileCheck %s
// RUN: pccx-opt %s | pccx-opt | FileCheck %s
// RUN: pccx-opt %s --mlir-print-op-generic | pccx-opt | FileCheck %s

// The three forms of a weight recipe, nested.
// CHECK: test.a = #pccx.recipe<tensor = "model.norm.weight">
// CHECK-SAME: test.b = #pccx.recipe<scale = <tensor = "w">, by = <tensor = "g">, factor = 5.000000e-01 : f32>
// CHECK-SAME: test.c = #pccx.recipe<quantize = <scale = <tensor = "w">, factor = 1.000000e+00 : f32>, scheme = "int4_per_row_search">
module attributes {
  test.a = #pccx.recipe<tensor = "model.norm.weight">,
  test.b = #pccx.recipe<scale = <tensor = "w">, by = <tensor = "g">, factor = 0.5 : f32>,
  test.c = #pccx.recipe<quantize = <scale = <tensor = "w">, factor = 1.0 : f32>, scheme = "int4_per_row_search">} {
}
