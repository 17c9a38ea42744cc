//===- MatmulInt8Kernels.h - GEMV/GEMM of integer numerics -----*- C++ -*-===//
//
// Integer numerics (docs/isa-semantics.md §2): an activation row is
// quantized to INT8 codes with one fp32 scale per block of 32 elements, and
// each block's dot product with a weight row's INT4/INT8 codes is an exact
// int32 sum. What remains in floating point has one order, so every kernel
// (portable, AVX2, NEON with widening multiplies for the Cortex-A53, NEON
// with the dot-product instructions of ARMv8.2) gives the same bits:
//
//   q[i] = round half away from zero (x[i] / s_b), clamped to [-127, 127],
//          with s_b = max |x| over block b / 127 (0 for an all-zero block);
//   g[b][j] = the int32 sum of products 4j .. 4j+3 of block b (kernel
//          order; j < 8), exact;
//   p[j] = 0 for j < 8; for each block b in order:
//          p[j] = p[j] + float(g[b][j]) * s_b   (two roundings);
//   p[j] += p[j + 4] (j < 4), p[j] += p[j + 2] (j < 2), p[0] += p[1];
//   y = w_scale * p[0]                      (y = p[0] without scales).
//
// Each partial is one SIMD lane: vpmaddubsw + vpmaddwd (AVX2), sdot or
// smull + two pairwise adds (NEON) leave exactly g[b][0..7] in the lanes,
// so no kernel reduces a block horizontally.
//
// float(g) is exact: |g| <= 4 * 128 * 127 < 2^24.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H
#define PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace pccx::sim {

/// Partial sums of a row (each takes four products of every block), and
/// the padding of a quantized row (in elements).
constexpr size_t kInt8Partials = 8;
constexpr size_t kInt8RowAlign = 32;

/// One GEMV/GEMM of integer numerics, prepared for a kernel. Weight rows
/// are as in MatmulJob (INT4 taken in kernel order); activation codes are
/// in the same order, so each product pairs the same two values.
struct MatmulInt8Job {
  const uint8_t *rows; ///< first weight row of the record
  size_t rowStride;    ///< bytes per weight row (a multiple of 16)
  bool int4;
  size_t blocks;        ///< blocks of 32 elements that hold weights
  size_t codesStride;   ///< codes per activation row (kInt8RowAlign multiple)
  size_t m, n;
  const int8_t *codes;  ///< m rows of codesStride codes, zero past K
  const float *blockScales; ///< m rows of codesStride / 32 scales, 0 past K
  const float *scales;  ///< n weight scales, or nullptr for 1
  float *out;           ///< m x n results
};

/// The kernels. Results are identical; only speed differs.
enum class Int8Isa { Scalar, Avx2, Neon, NeonDot };

bool int8IsaAvailable(Int8Isa isa);
/// The fastest kernel this CPU runs (NeonDot where the CPU reports the
/// dot-product instructions, checked at run time).
Int8Isa bestInt8Isa();
const char *int8IsaName(Int8Isa isa);
bool parseInt8Isa(const std::string &name, Int8Isa *isa);

/// Quantizes `kPadded` activations (a multiple of 32, kernel order) into
/// `codes` and one scale per block into `blockScales`.
void quantizeActivationsInt8(const float *x, size_t kPadded, int8_t *codes,
                             float *blockScales);

/// Computes output features [n0, n1) of every row of `job` with kernel
/// `isa`, which must be available.
void matmulInt8Features(const MatmulInt8Job &job, size_t n0, size_t n1,
                        Int8Isa isa);

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_MATMULINT8KERNELS_H
