//===- MatmulInt8Kernels.h - GEMV/GEMM of integer numerics -----*- C++ -*-===//
//
// Integer numerics (docs/isa-semantics.md §2): an activation row is
// quantized to INT8 codes with one fp32 scale per block of 128 elements, and
// each block's dot product with a weight row's INT4/INT8 codes is a set of
// exact int32 sums. What remains in floating point has one order, so every
// kernel (portable, AVX2, AVX-512 VNNI, NEON with widening multiplies for the
// Cortex-A53, NEON with the dot-product instructions of ARMv8.2) gives the
// same bits. Elements are in kernel order (an INT4 group of 32: its 16 low
// nibbles, then its 16 high ones); e is an element's index in its block:
//
//   q[i] = round half away from zero (x[i] / s_b), clamped to [-127, 127],
//          with s_b = max |x| over block b / 127 (0 for an all-zero block);
//   g[b][j] = the int32 sum of the products of block b whose
//          (e mod 64) / 4 == j (j < 16; eight products each), exact;
//   p[j] = 0 for j < 16; for each block b in order:
//          p[j] = p[j] + float(g[b][j]) * s_b   (two roundings);
//   p[j] += p[j + 8] (j < 8), p[j] += p[j + 4] (j < 4),
//   p[j] += p[j + 2] (j < 2), p[0] += p[1];
//   y = w_scale * p[0]                      (y = p[0] without scales).
//
// A 32-bit lane of a dot-product instruction (vpdpbusd, sdot) or of
// vpmaddubsw + vpmaddwd / smull + two pairwise adds sums four neighbouring
// products, and each register of them keeps its lanes for a whole block:
// the float work is one multiply-add per 8 products, not per product, and
// no kernel reduces across lanes within a block.
//
// float(g) is exact: |g| <= 8 * 128 * 127 < 2^24.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H
#define PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace pccx::sim {

/// Activations per scale, partial sums of a row, and the padding of a
/// quantized row (in elements).
constexpr size_t kInt8Block = 128;
constexpr size_t kInt8Partials = 16;
constexpr size_t kInt8RowAlign = kInt8Block;

/// One GEMV/GEMM of integer numerics, prepared for a kernel. Weight rows
/// are as in MatmulJob (INT4 taken in kernel order); activation codes are
/// in the same order, so each product pairs the same two values.
struct MatmulInt8Job {
  const uint8_t *rows; ///< first weight row of the record
  size_t rowStride;    ///< bytes per weight row (a multiple of 16)
  bool int4;
  size_t groups;        ///< groups of 32 elements that hold weights
  size_t codesStride;   ///< codes per activation row (kInt8RowAlign multiple)
  size_t m, n;
  const int8_t *codes;  ///< m rows of codesStride codes, zero past K
  const float *blockScales; ///< m rows of codesStride / 128 scales
  /// m rows of codesStride / 128 blocks of 16 sums: the codes of each
  /// partial (what the unsigned-times-signed kernels subtract).
  const int32_t *codeSums;
  const float *scales;  ///< n weight scales, or nullptr for 1
  float *out;           ///< m x n results
};

/// The kernels. Results are identical; only speed differs.
enum class Int8Isa { Scalar, Avx2, Avx512Vnni, Neon, NeonDot };

bool int8IsaAvailable(Int8Isa isa);
/// The fastest kernel this CPU runs (checked at run time: AVX-512 VNNI,
/// then AVX2; NEON with the dot-product instructions where the CPU reports
/// them, then NEON).
Int8Isa bestInt8Isa();
const char *int8IsaName(Int8Isa isa);
bool parseInt8Isa(const std::string &name, Int8Isa *isa);
/// "scalar, avx2, ..." (every kernel, for messages).
const char *int8IsaNames();

/// Quantizes the first `k` activations of a row (kernel order; the rest of
/// the row, up to `stride` codes, a kInt8RowAlign multiple, is zero) into
/// `codes`, one scale per block into `blockScales` and the partials' code
/// sums into `codeSums` (stride / 128 * 16 of them).
void quantizeActivationsInt8(const float *x, size_t k, size_t stride,
                             int8_t *codes, float *blockScales,
                             int32_t *codeSums);

/// Computes output features [n0, n1) of every row of `job` with kernel
/// `isa`, which must be available.
void matmulInt8Features(const MatmulInt8Job &job, size_t n0, size_t n1,
                        Int8Isa isa);

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H
