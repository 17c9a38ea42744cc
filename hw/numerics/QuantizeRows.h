//===- QuantizeRows.h - quantize and pack rows on threads -------*- C++ -*-===//
//
// The compiler's inner loop when it writes weights: rows of a weight block to
// per-row scales and packed codes. Rows are independent, so they are split into
// contiguous ranges, one per thread; each row's bytes are the same whichever
// thread computes them, and the output does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_QUANTIZEROWS_H
#define PCCX_HW_NUMERICS_QUANTIZEROWS_H

#include "hw/numerics/Quantize.h"

#include <cstddef>
#include <cstdint>

namespace pccx::hw {

/// The number of threads `threads` stands for: itself, or one per hardware
/// thread when 0.
unsigned resolveThreads(unsigned threads);

/// Rows [0, rows) of `in` (each `cols` floats): scales[r] and the packed
/// codes at out + r * stride (packedRowBytes(scheme.format, cols) bytes;
/// the rest of each stride is left as it is), on up to `threads` threads
/// (0 = one per hardware thread).
void quantizeAndPackRows(QuantScheme scheme, const float *in, int64_t rows,
                         int64_t cols, float *scales, uint8_t *out,
                         size_t stride, unsigned threads);

} // namespace pccx::hw

#endif
