//===- MatmulKernels.h - GEMV/GEMM dot-product kernels ----------*- C++ -*-===//
//
// The inner loops of the simulator's GEMV/GEMM (docs/isa-semantics.md §2,
// §5, §6): integer weight rows of one record times fp32 activation rows.
// There is a portable kernel and, chosen at run time, AVX2 and AVX-512 ones
// on x86-64 and a NEON one on aarch64.
// Every kernel performs the same fp32 operations in the same order: for each
// output, 32 partial sums (partial j takes the products of kernel-order
// element j of every 32-element block, block by block, each product rounded
// to fp32 before it is added), combined pairwise (j += j+16, j += j+8, ...),
// then multiplied by the feature's scale. Results therefore do not depend on
// the CPU, the kernel or how features are split across threads.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_MATMULKERNELS_H
#define PCCX_RUNTIME_SIM_MATMULKERNELS_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace pccx::sim {

/// Elements per block of the fixed summation order (32 partial sums).
constexpr size_t kMatmulBlock = 32;

/// One GEMV/GEMM's operands, prepared for a kernel.
///
/// Kernel order: INT8 elements keep their natural order. An INT4 block of
/// 16 bytes (elements 32b..32b+31, low nibble first) is taken as its 16 low
/// nibbles, then its 16 high nibbles; the activations are permuted the same
/// way (permuteInt4Activations) so each product pairs the same two values.
struct MatmulJob {
  const uint8_t *rows; ///< first weight row of the record
  size_t rowStride;    ///< bytes per weight row (a multiple of 16)
  bool int4;
  size_t kPadded; ///< K rounded up to kMatmulBlock; >= elements per row
  size_t m, n;
  const float *in;     ///< m rows of kPadded floats in kernel order, zero
                       ///< beyond K
  const float *scales; ///< n scales, or nullptr for 1
  float *out;          ///< m x n results
};

/// The kernels. Results are identical; only speed differs.
enum class MatmulIsa { Scalar, Avx2, Avx512, Neon };

/// Whether this CPU (and this build) can run `isa`.
bool matmulIsaAvailable(MatmulIsa isa);
/// The fastest kernel this CPU can run.
MatmulIsa bestMatmulIsa();
const char *matmulIsaName(MatmulIsa isa);
/// The kernel named `name` ("scalar", "avx2", "avx512", "neon"); false for
/// others.
bool parseMatmulIsa(const std::string &name, MatmulIsa *isa);

/// Computes output features [n0, n1) of every row of `job` with kernel
/// `isa`, which must be available.
void matmulFeatures(const MatmulJob &job, size_t n0, size_t n1, MatmulIsa isa);

/// Reorders one activation row of `kPadded` elements (a multiple of 32)
/// into INT4 kernel order.
void permuteInt4Activations(const float *natural, float *kernelOrder,
                            size_t kPadded);

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_MATMULKERNELS_H
