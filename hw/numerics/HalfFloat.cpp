//===- HalfFloat.cpp - fp16 conversions -----------------------------------===//

#include "hw/numerics/HalfFloat.h"

#include <cmath>

namespace pccx::hw {

float f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31)
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToF16(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) { // Inf or NaN
    if (magnitude == 0x7f800000u)
      return sign | 0x7c00;
    return static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x3ff));
  }
  if (magnitude >= 0x477ff000u) // 65520 and above round to infinity
    return sign | 0x7c00;
  if (magnitude < 0x38800000u) { // below 2^-14: subnormal half or zero
    uint32_t exponent = magnitude >> 23;
    if (exponent < 102) // below 2^-25: rounds to zero
      return sign;
    uint32_t significand = (magnitude & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - exponent; // 14 ... 24
    uint32_t result = significand >> shift;
    uint32_t rest = significand & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (result & 1)))
      ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result =
      ((magnitude >> 23) - 112) << 10 | ((magnitude >> 13) & 0x3ff);
  uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (result & 1)))
    ++result; // a carry into the exponent is the correct rounding
  return static_cast<uint16_t>(sign | result);
}

} // namespace pccx::hw
