//===- Sparsity.h - Gemma 3n's gaussian top-k activation sparsity -*- C++ -*-===//
//
// The cutoff of Hugging Face's _gaussian_topk: mean + std * multiplier over
// one row (the population standard deviation, sums in double). The float
// reference and the runtime's host kernel both call it, so the sparse FFN
// layers keep the same elements in both.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_SPARSITY_H
#define PCCX_HW_NUMERICS_SPARSITY_H

#include <cmath>
#include <cstdint>

namespace pccx::hw {

inline float gaussianTopKCutoff(const float *x, int64_t n, float multiplier) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i];
  const float mean = float(sum / double(n));
  double var = 0;
  for (int64_t i = 0; i < n; ++i)
    var += double(x[i] - mean) * double(x[i] - mean);
  return mean + float(std::sqrt(var / double(n))) * multiplier;
}

} // namespace pccx::hw

#endif
