// RUN: pccx-opt %s --gemma3n-fuse-laurel --split-input-file | FileCheck %s

// combine(act, rms(attn, g), laurel(xn)) * s -> one laurel_residual whose
// gains absorb s.
// CHECK-LABEL: func.func @residual
func.func @residual(%act: tensor<8xf32>, %xn: tensor<8xf32>, %attn: tensor<8xf32>) -> tensor<8xf32> {
  // CHECK: %[[L:.*]] = gemma3n.weight "left"
  // CHECK: %[[R:.*]] = gemma3n.weight "right"
  // CHECK: %[[GL:.*]] = gemma3n.weight "laurel_norm"
  // CHECK-NEXT: %[[GLS:.*]] = gemma3n.scale_weight %[[GL]] {factor = 0.707106769 : f32} : (tensor<8xbf16>) -> tensor<8xf32>
  // CHECK: %[[GA:.*]] = gemma3n.weight "post_attn"
  // CHECK-NEXT: %[[GAS:.*]] = gemma3n.scale_weight %[[GA]] {factor = 0.707106769 : f32}
  // CHECK-NOT: gemma3n.laurel %
  // CHECK-NOT: gemma3n.combine
  // CHECK: %[[F:.*]] = gemma3n.laurel_residual %arg0, %arg2, %arg1, %[[L]], %[[R]], %[[GAS]], %[[GLS]] {eps = 9.99999997E-7 : f32, residual_scale = 0.707106769 : f32}
  // CHECK: return %[[F]]
  %l = gemma3n.weight "left" : tensor<2x8xbf16>
  %r = gemma3n.weight "right" : tensor<8x2xbf16>
  %gl = gemma3n.weight "laurel_norm" : tensor<8xbf16>
  %ga = gemma3n.weight "post_attn" : tensor<8xbf16>
  %lau = gemma3n.laurel %xn, %l, %r, %gl {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<2x8xbf16>, tensor<8x2xbf16>, tensor<8xbf16>) -> tensor<8xf32>
  %an = gemma3n.rms_norm %attn, %ga {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %x = gemma3n.combine %act, %an, %lau {scale = 0.707106769 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %x : tensor<8xf32>
}

// -----

// LAuReL output used elsewhere too: left alone.
// CHECK-LABEL: func.func @laurel_escapes
func.func @laurel_escapes(%act: tensor<8xf32>, %xn: tensor<8xf32>, %attn: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK-NOT: laurel_residual
  // CHECK: gemma3n.combine
  %l = gemma3n.weight "left" : tensor<2x8xbf16>
  %r = gemma3n.weight "right" : tensor<8x2xbf16>
  %gl = gemma3n.weight "laurel_norm" : tensor<8xbf16>
  %ga = gemma3n.weight "post_attn" : tensor<8xbf16>
  %lau = gemma3n.laurel %xn, %l, %r, %gl {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<2x8xbf16>, tensor<8x2xbf16>, tensor<8xbf16>) -> tensor<8xf32>
  %an = gemma3n.rms_norm %attn, %ga {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %x = gemma3n.combine %act, %an, %lau {scale = 0.707106769 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %x, %lau : tensor<8xf32>, tensor<8xf32>
}
