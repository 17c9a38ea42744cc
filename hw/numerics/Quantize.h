//===- Quantize.h - the target's weight quantization rule -------*- C++ -*-===//
//
// INT4 (default) or INT8 weights with one fp32 scale per output row
// (docs/isa-semantics.md section 6 for the packed record): the one
// definition used by the compiler's weight passes and emitter, the runtime's
// gather tables, and the float reference when it runs with a bundle's
// weights.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_QUANTIZE_H
#define PCCX_HW_NUMERICS_QUANTIZE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace pccx::hw {

/// scale = max|row| / 7; q[i] = clamp(round-half-away-from-zero(row[i] /
/// scale), -8, 7); an all-zero row has scale 0 and q = 0. Returns the scale;
/// `q` may be null when only the scale is wanted.
float quantizeRowInt4(const float *row, size_t n, int8_t *q);

/// Replaces row[i] by q[i] * scale, the value the hardware multiplies with.
void fakeQuantizeRowInt4(float *row, size_t n);

/// INT4 with a searched scale: the (scale, codes) pair with the smallest
/// squared reconstruction error sum_i (row[i] - q[i] * scale)^2 among
/// candidates that include the absmax one, so it is never worse than
/// quantizeRowInt4. Candidate k = 0..kScaleSearchSteps divides max|row| by
/// 7 + k/4, rounds to codes as quantizeRowInt4 does, then refits the scale
/// to the least-squares optimum for those codes, sum(row*q) / sum(q*q).
/// Deterministic; the record format is unchanged.
float quantizeRowInt4Search(const float *row, size_t n, int8_t *q);
/// The last candidate of quantizeRowInt4Search (divisor 7 + 12/4 = 10).
constexpr int kScaleSearchSteps = 12;

/// The forms of quantizeRowInt4Search: portable C++ and, on x86-64 CPUs that
/// have it, AVX2. They give identical scales and codes; the three-argument
/// form uses the fastest one available.
enum class QuantizeIsa { Portable, Avx2 };
bool quantizeIsaAvailable(QuantizeIsa isa);
/// `isa` must be available.
float quantizeRowInt4Search(const float *row, size_t n, int8_t *q,
                            QuantizeIsa isa);

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

/// A weight storage format; the value is the weight_shape `c` field that
/// selects it in GEMV/GEMM (docs/isa-semantics.md section 4).
enum class WeightFormat : uint8_t { Int4 = 0, Int8 = 1 };

/// How the compiler chooses a row's scale (and so its codes). The record
/// format is the same for every rule: one fp32 scale per row, symmetric
/// codes, no zero-point (the record has no field for one).
enum class ScaleRule : uint8_t {
  AbsMax, ///< max|row| / qmax
  Search, ///< INT4: quantizeRowInt4Search; INT8 keeps absmax
};
/// "absmax", "search".
const char *scaleRuleName(ScaleRule rule);
bool parseScaleRule(const std::string &name, ScaleRule *rule);

/// How the compiler chooses a row's codes once its scale is chosen.
enum class Rounding : uint8_t {
  Nearest, ///< each weight to its nearest code
  Gptq,    ///< INT4: error-compensating rounding on calibration statistics
           ///< (hw/numerics/Gptq.h); the codes depend on more than the row
};
/// "nearest", "gptq".
const char *roundingName(Rounding rounding);
bool parseRounding(const std::string &name, Rounding *rounding);

/// A quantization scheme: storage format, scale rule, rounding, and the
/// columns one scale covers.
struct QuantScheme {
  WeightFormat format = WeightFormat::Int4;
  ScaleRule scales = ScaleRule::AbsMax;
  Rounding rounding = Rounding::Nearest;
  /// 0: one scale per row. Otherwise every `group` consecutive columns of a
  /// row (the last group may be narrower) have their own scale and codes,
  /// chosen by the same rule as a row's: a record holds one group of
  /// columns, and a projection is several K-sliced GEMV/GEMM that
  /// accumulate (docs/quantization.md, "Group scales").
  int64_t group = 0;
};

/// The columns one group scale may cover: a multiple of kGroupAlign (whole
/// 16-byte INT4 rows, whole activation words) up to the 16-bit K field.
constexpr int64_t kGroupAlign = 32;
constexpr int64_t kMaxGroup = 65504;
/// Why `group` (0 or a group size) is not one; empty when it is.
std::string checkGroup(int64_t group);

/// The quantization scheme names of gemma3n.quantize and the manifest:
/// "int4_per_row" (absmax scales), "int4_per_row_search", "int8_per_row",
/// and for GPTQ rounding "int4_per_row_gptq", "int4_per_row_search_gptq";
/// with group scales "per_row" becomes "g<N>": "int4_g64_search".
/// The WeightFormat forms name and accept the absmax scheme of a format /
/// give the format of any scheme.
const char *schemeName(WeightFormat format);
std::string schemeName(QuantScheme scheme);
bool parseScheme(const std::string &name, WeightFormat *format);
bool parseScheme(const std::string &name, QuantScheme *scheme);

/// The groups of a row of n columns under `scheme`: 1 without group
/// scales, else ceil(n / group); group g covers columns
/// [g * width, min(n, (g + 1) * width)) with width = groupWidth(scheme, n).
int64_t groupCount(const QuantScheme &scheme, int64_t n);
int64_t groupWidth(const QuantScheme &scheme, int64_t n);
/// "int4", "int8": a gather table's format in the manifest.
const char *formatName(WeightFormat format);
bool parseFormatName(const std::string &name, WeightFormat *format);

/// One row in `format`: scale and codes (quantizeRowInt4 / quantizeRowInt8).
float quantizeRow(WeightFormat format, const float *row, size_t n, int8_t *q);
/// Replaces row[i] by the value the hardware multiplies with.
void fakeQuantizeRow(WeightFormat format, float *row, size_t n);
/// The same under a scheme's scale rule: every producer of a bundle's codes
/// (records, gather tables) and every reader that re-derives them (weight
/// expressions, the reference's quantized weights) goes through these.
/// Rounding::Gptq needs the tensor's input statistics, which a row alone
/// does not have: these give the scale rule's nearest codes for it, and
/// the compiler's weight evaluator calls quantizeRowInt4Gptq instead.
/// quantizeRow quantizes the row as one group whatever scheme.group says
/// (a record or a gather group is one group); quantizeRowGroups and
/// fakeQuantizeRow follow scheme.group, scales[g] for group g.
float quantizeRow(QuantScheme scheme, const float *row, size_t n, int8_t *q);
void quantizeRowGroups(QuantScheme scheme, const float *row, size_t n,
                       int8_t *q, float *scales);
void fakeQuantizeRow(QuantScheme scheme, float *row, size_t n);
/// Bytes of n packed codes (INT4: two per byte; INT8: one).
size_t packedRowBytes(WeightFormat format, size_t n);
void packRow(WeightFormat format, const int8_t *q, size_t n, uint8_t *out);
void unpackRow(WeightFormat format, const uint8_t *packed, size_t n,
               float scale, float *out);
/// unpackRow of a row whose every `group` columns (0: all of them) have
/// their own scale, scales[g] for group g.
void unpackRowGroups(WeightFormat format, const uint8_t *packed, size_t n,
                     int64_t group, const float *scales, float *out);

/// x rounded up to a multiple of 16 bytes (one 128-bit word): the alignment
/// of weight-record parts and of the bundle's table data.
constexpr uint64_t pad16(uint64_t x) { return (x + 15) / 16 * 16; }

/// A GEMV/GEMM weight record of N rows of K codes with per-row scales:
/// pad16(4N) bytes of scales, then N rows of pad16(packedRowBytes(K)).
int64_t recordScaleBytes(int64_t n);
int64_t recordRowStride(WeightFormat format, int64_t k);
int64_t recordBytes(WeightFormat format, int64_t n, int64_t k);
/// The bytes one row of a quantized gather table takes: its packed codes
/// and its scales (one, or one per `group` columns).
int64_t gatherRowBytes(WeightFormat format, int64_t group, int64_t cols);
/// The bytes of an N x K tensor's records under `scheme`: one record, or
/// one per group of columns.
int64_t tensorRecordBytes(const QuantScheme &scheme, int64_t n, int64_t k);

} // namespace pccx::hw

#endif
