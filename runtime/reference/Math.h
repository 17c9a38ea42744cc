//===- Math.h - fp32 kernels of the float reference -------------*- C++ -*-===//
//
// The Gemma 3n building blocks as Hugging Face computes them in float32
// (docs/gemma3n-semantics.md). Used only by the float reference, which is
// kept independent of the dialects, passes and runtime host kernels so that
// it can catch their mistakes.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_MATH_H
#define PCCX_RUNTIME_REFERENCE_MATH_H

#include <cstddef>
#include <cstdint>

namespace pccx::reference {

/// y[i] = x[i] / sqrt(mean(x^2) + eps) * (gain ? gain[i] : 1).
void rmsNorm(const float *x, const float *gain, size_t n, float eps, float *y);

/// sqrt(mean(x^2)).
float rootMeanSquare(const float *x, size_t n);

/// GELU with the tanh approximation ("gelu_pytorch_tanh").
float geluTanh(float x);

/// Rotary embedding of one head (rotate_half convention: the two halves,
/// not interleaved pairs) at `position` with base `theta`.
void applyRope(float *head, size_t headDim, int64_t position, double theta);

/// Gaussian top-k: relu(x - (mean + std * multiplier)), std with divisor n.
void gaussianTopK(float *x, size_t n, float multiplier);

/// Dot product in float32 with a fixed summation order.
float dot(const float *a, const float *b, size_t n);

} // namespace pccx::reference

#endif
