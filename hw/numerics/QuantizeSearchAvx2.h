//===- QuantizeSearchAvx2.h - AVX2 form of the INT4 scale search -*- C++
//-*-===//
//
// Internal to Quantize.cpp, which chooses it at run time.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_QUANTIZESEARCHAVX2_H
#define PCCX_HW_NUMERICS_QUANTIZESEARCHAVX2_H

#include <cstddef>
#include <cstdint>

namespace pccx::hw::detail {

/// Whether this build has the AVX2 form and this CPU can run it.
bool haveQuantizeSearchAvx2();
/// quantizeRowInt4Search with the same operations in the same order, eight
/// elements at a time; identical scale and codes.
float quantizeRowInt4SearchAvx2(const float *row, size_t n, int8_t *q);

} // namespace pccx::hw::detail

#endif
