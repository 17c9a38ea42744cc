//===- Math.cpp - fp32 kernels of the float reference -----------*- C++ -*-===//

#include "runtime/reference/Math.h"

#include "hw/numerics/Dot.h"
#include "hw/numerics/Sparsity.h"

#include <cmath>
#include <vector>

namespace pccx::reference {

float dot(const float *a, const float *b, size_t n) {
  return hw::dot(a, b, n);
}

float rootMeanSquare(const float *x, size_t n) {
  return std::sqrt(dot(x, x, n) / float(n));
}

void rmsNorm(const float *x, const float *gain, size_t n, float eps,
             float *y) {
  float inv = 1.0f / std::sqrt(dot(x, x, n) / float(n) + eps);
  for (size_t i = 0; i < n; ++i)
    y[i] = x[i] * inv * (gain ? gain[i] : 1.0f);
}

float geluTanh(float x) {
  const float k = 0.7978845608028654f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

void applyRope(float *head, size_t headDim, int64_t position, double theta) {
  size_t half = headDim / 2;
  std::vector<float> rotated(headDim);
  for (size_t j = 0; j < half; ++j) {
    // inv_freq_j = theta^(-2j/d), computed in float32 as HF does.
    float invFreq =
        1.0f / float(std::pow(theta, double(float(2 * j) / float(headDim))));
    float angle = float(position) * invFreq;
    float c = std::cos(angle), s = std::sin(angle);
    float x1 = head[j], x2 = head[j + half];
    rotated[j] = x1 * c - x2 * s;
    rotated[j + half] = x2 * c + x1 * s;
  }
  for (size_t i = 0; i < headDim; ++i)
    head[i] = rotated[i];
}

void gaussianTopK(float *x, size_t n, float multiplier) {
  const float cutoff = hw::gaussianTopKCutoff(x, int64_t(n), multiplier);
  for (size_t i = 0; i < n; ++i)
    x[i] = x[i] - cutoff > 0 ? x[i] - cutoff : 0.0f;
}

} // namespace pccx::reference
