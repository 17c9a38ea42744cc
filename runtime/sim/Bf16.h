//===- Bf16.h - bfloat16 rounding -------------------------------*- C++ -*-===//
//
// bfloat16 is the upper half of an IEEE fp32 value: sign, 8 exponent bits,
// 7 mantissa bits. The hardware numerics mode stores every L2 value in this
// format (docs/isa-semantics.md, "Numerics modes"). Rounding is to nearest,
// ties to even; values past the largest bf16 round to infinity; subnormals are
// kept; a NaN stays a (quiet) NaN with its sign.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_BF16_H
#define PCCX_RUNTIME_SIM_BF16_H

#include <cstdint>
#include <cstring>

namespace pccx::sim {

/// The 16-bit bf16 encoding of `value`, rounded to nearest even.
inline uint16_t bf16Bits(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof(u));
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep it a NaN after truncation
    return uint16_t((u >> 16) | 0x0040u);
  uint32_t tieToEven = 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t((u + tieToEven) >> 16);
}

/// The fp32 value of a bf16 encoding (exact).
inline float bf16ToFloat(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// `value` rounded to the nearest bf16, returned as fp32.
inline float roundToBf16(float value) { return bf16ToFloat(bf16Bits(value)); }

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_BF16_H
