//===- Quantize.cpp - the target's weight quantization rule ---------------===//

#include "hw/numerics/Quantize.h"

#include <algorithm>
#include <cmath>

namespace pccx::hw {

float quantizeRowInt4(const float *row, size_t n, int8_t *q) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 7.0f;
  if (q)
    for (size_t i = 0; i < n; ++i) {
      // std::round rounds halves away from zero.
      float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
      q[i] = int8_t(std::min(7.0f, std::max(-8.0f, v)));
    }
  return scale;
}

float quantizeRowInt8(const float *row, size_t n, int8_t *q) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 127.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
    q[i] = int8_t(std::min(127.0f, std::max(-127.0f, v)));
  }
  return scale;
}

void fakeQuantizeRowInt4(float *row, size_t n) {
  float maxAbs = 0;
  for (size_t i = 0; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));
  float scale = maxAbs / 7.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = scale == 0 ? 0.0f : std::round(row[i] / scale);
    row[i] = std::min(7.0f, std::max(-8.0f, v)) * scale;
  }
}

void packInt4(const int8_t *q, size_t n, uint8_t *out) {
  for (size_t j = 0; 2 * j < n; ++j) {
    uint8_t lo = uint8_t(q[2 * j]) & 0xf;
    uint8_t hi = 2 * j + 1 < n ? uint8_t(q[2 * j + 1]) & 0xf : 0;
    out[j] = uint8_t(lo | (hi << 4));
  }
}

void unpackInt4Row(const uint8_t *packed, size_t n, float scale, float *out) {
  for (size_t i = 0; i < n; ++i) {
    int nibble = (packed[i / 2] >> ((i & 1) * 4)) & 0xf;
    out[i] = float(nibble >= 8 ? nibble - 16 : nibble) * scale;
  }
}

} // namespace pccx::hw
