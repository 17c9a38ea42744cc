// RUN: pccx-opt %s --gemma3n-fold-norm-gains --split-input-file | FileCheck %s

// The pre-feedforward gain moves into gate and up; the norm loses it.
// CHECK-LABEL: func.func @ffn_input
func.func @ffn_input(%x: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: %[[G:.*]] = gemma3n.weight "pre_ff"
  // CHECK: %[[WG:.*]] = gemma3n.weight "gate"
  // CHECK-NEXT: %[[SG:.*]] = gemma3n.scale_weight %[[WG]] by %[[G]] {factor = 1.000000e+00 : f32} : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xf32>
  // CHECK: %[[WU:.*]] = gemma3n.weight "up"
  // CHECK-NEXT: %[[SU:.*]] = gemma3n.scale_weight %[[WU]] by %[[G]]
  // CHECK: %[[WD:.*]] = gemma3n.weight "down"
  // CHECK: %[[N:.*]] = gemma3n.rms_norm %arg0 {eps = {{.*}}} : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK: gemma3n.ffn %[[N]], %[[SG]], %[[SU]], %[[WD]]
  %g = gemma3n.weight "pre_ff" : tensor<8xbf16>
  %wg = gemma3n.weight "gate" : tensor<16x8xbf16>
  %wu = gemma3n.weight "up" : tensor<16x8xbf16>
  %wd = gemma3n.weight "down" : tensor<8x16xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %f = gemma3n.ffn %h, %wg, %wu, %wd {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return %f : tensor<8xf32>
}

// -----

// A norm whose output is also used directly keeps its gain.
// CHECK-LABEL: func.func @also_used_directly
func.func @also_used_directly(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-NOT: scale_weight
  // CHECK: gemma3n.rms_norm %arg0, %{{.*}} {eps
  %g = gemma3n.weight "input_ln" : tensor<8xbf16>
  %wg = gemma3n.weight "gate" : tensor<16x8xbf16>
  %wd = gemma3n.weight "down" : tensor<8x16xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %f = gemma3n.ffn %h, %wg, %wg, %wd {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return %f, %h : tensor<8xf32>, tensor<8xf32>
}

// -----

// Final norm before an untied head: folded into the head's table.
// CHECK-LABEL: func.func @untied_head
func.func @untied_head(%x: tensor<8xf32>) -> tensor<32xf32> {
  // CHECK: %[[T:.*]] = gemma3n.weight "lm_head.weight"
  // CHECK-NEXT: %[[S:.*]] = gemma3n.scale_weight %[[T]] by
  // CHECK: gemma3n.lm_head %{{.*}}, %[[S]]
  %g = gemma3n.weight "norm" : tensor<8xbf16>
  %t = gemma3n.weight "lm_head.weight" : tensor<32x8xbf16>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %l = gemma3n.lm_head %h, %t : (tensor<8xf32>, tensor<32x8xbf16>) -> tensor<32xf32>
  return %l : tensor<32xf32>
}

// -----

// A tied head shares the embedding table: not folded (the lookup needs the
// original rows).
// CHECK-LABEL: func.func @tied_head
func.func @tied_head(%tok: tensor<1xi32>, %x: tensor<8xf32>) -> (tensor<32xf32>, tensor<8xf32>) {
  // CHECK-NOT: scale_weight
  // CHECK: gemma3n.rms_norm %arg1, %{{.*}} {eps
  %g = gemma3n.weight "norm" : tensor<8xbf16>
  %t = gemma3n.weight "embed" : tensor<32x8xbf16>
  %e = gemma3n.embed %tok, %t {scale = 1.0 : f32} : (tensor<1xi32>, tensor<32x8xbf16>) -> tensor<8xf32>
  %h = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %l = gemma3n.lm_head %h, %t : (tensor<8xf32>, tensor<32x8xbf16>) -> tensor<32xf32>
  return %l, %e : tensor<32xf32>, tensor<8xf32>
}
