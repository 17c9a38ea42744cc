//===- Quantize.h - the target's weight quantization rule -------*- C++ -*-===//
//
// INT4 weights with one fp32 scale per output row (docs/numerics in the
// README, docs/isa-semantics.md section 6 for the packed record): the one
// definition used by the compiler's weight passes and emitter and by the
// float reference when it runs with a bundle's weights.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_QUANTIZE_H
#define PCCX_HW_NUMERICS_QUANTIZE_H

#include <cstddef>
#include <cstdint>

namespace pccx::hw {

/// scale = max|row| / 7; q[i] = clamp(round-half-away-from-zero(row[i] /
/// scale), -8, 7); an all-zero row has scale 0 and q = 0. Returns the scale;
/// `q` may be null when only the scale is wanted.
float quantizeRowInt4(const float *row, size_t n, int8_t *q);

/// Replaces row[i] by q[i] * scale, the value the hardware multiplies with.
void fakeQuantizeRowInt4(float *row, size_t n);

/// Packs q (values in [-8, 7]) two per byte: element 2j in the low nibble,
/// 2j+1 in the high nibble, two's complement; for odd n the last high
/// nibble is 0. `out` holds (n + 1) / 2 bytes.
void packInt4(const int8_t *q, size_t n, uint8_t *out);

/// INT8 with one scale per row (the KV cache's int8 storage): scale =
/// max|row| / 127, q[i] = clamp(round-half-away-from-zero(row[i] / scale),
/// -127, 127); an all-zero row has scale 0 and q = 0. Returns the scale.
float quantizeRowInt8(const float *row, size_t n, int8_t *q);

/// The inverse of packInt4 followed by the scale: out[i] = q[i] * scale.
void unpackInt4Row(const uint8_t *packed, size_t n, float scale, float *out);

} // namespace pccx::hw

#endif
