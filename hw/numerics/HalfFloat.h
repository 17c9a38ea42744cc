//===- HalfFloat.h - bf16 and fp16 conversions ------------------*- C++ -*-===//
//
// The 16-bit float formats the project meets: bf16 (checkpoints, the L2
// words of the hardware numerics mode, the KV260 host window) and IEEE fp16
// (checkpoints, the host KV cache). Widening is exact. Narrowing rounds to
// nearest, ties to even; values past the largest finite value become
// infinity; subnormals are kept. Every NaN narrows to bf16 as the one
// canonical quiet NaN 0x7FC0 (positive, payload zero): the sign and
// payload of a NaN the arithmetic makes differ between CPUs (x86-64 makes
// 0xFFC00000, aarch64 0x7FC00000), and no stored bit may. fp16 keeps the
// NaN's sign and top payload bits. Every component converts through these
// functions only.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_HALFFLOAT_H
#define PCCX_HW_NUMERICS_HALFFLOAT_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pccx::hw {

/// The IEEE bits of an fp32 value, and back.
inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The fp32 value of a bf16 encoding (its upper 16 bits).
inline float bf16ToFloat(uint16_t bits) {
  return bitsFloat(uint32_t(bits) << 16);
}

/// The canonical quiet NaN, as fp32 bits and as bf16.
constexpr uint32_t kCanonicalNanBits = 0x7fc00000u;
constexpr uint16_t kCanonicalBf16Nan = 0x7fc0u;

/// `value`, or the canonical NaN if it is a NaN (a select, no branch).
inline float canonicalizeNan(float value) {
  const uint32_t u = floatBits(value);
  return bitsFloat((u & 0x7fffffffu) > 0x7f800000u ? kCanonicalNanBits : u);
}

/// The bf16 encoding nearest to `value`; every NaN gives kCanonicalBf16Nan.
/// Both results are computed and one selected, so loops over it vectorize.
inline uint16_t floatToBf16(float value) {
  const uint32_t u = floatBits(value);
  const uint16_t rounded = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return (u & 0x7fffffffu) > 0x7f800000u ? kCanonicalBf16Nan : rounded;
}

/// The two conversions over arrays, as the KV260 driver converts the host
/// window. Branch-free element functions and unaliased pointers let an
/// optimizing compiler vectorize both loops (NEON on the board's A53).
inline void floatToBf16Row(const float *__restrict in,
                           uint16_t *__restrict out, size_t count) {
  for (size_t i = 0; i < count; ++i)
    out[i] = floatToBf16(in[i]);
}
inline void bf16ToFloatRow(const uint16_t *__restrict in,
                           float *__restrict out, size_t count) {
  for (size_t i = 0; i < count; ++i)
    out[i] = bf16ToFloat(in[i]);
}

/// `value` rounded to the nearest bf16, as fp32.
inline float roundToBf16(float value) {
  return bf16ToFloat(floatToBf16(value));
}

/// The fp32 value of an IEEE binary16 encoding.
float f16ToFloat(uint16_t bits);
/// The IEEE binary16 encoding nearest to `value`.
uint16_t floatToF16(float value);

} // namespace pccx::hw

#endif // PCCX_HW_NUMERICS_HALFFLOAT_H
