//===- Dot.h - the fp32 dot product every CPU path uses ---------*- C++ -*-===//
//
// Eight independent partial sums, added pairwise at the end: vectorisable
// and order-stable, so the float reference and the host kernels sum in the
// same order whatever the compiler does (both are built without FP
// contraction).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_DOT_H
#define PCCX_HW_NUMERICS_DOT_H

#include <cstddef>

namespace pccx::hw {

inline float dot(const float *a, const float *b, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += a[i + j] * b[i + j];
  float tail = 0;
  for (; i < n; ++i)
    tail += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

} // namespace pccx::hw

#endif
