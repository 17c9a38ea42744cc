//===- Gptq.h - error-compensating INT4 rounding ----------------*- C++ -*-===//
//
// GPTQ-style rounding within the per-row INT4 format: a row's scale is
// chosen as usual (absmax or searched), then its codes are chosen column by
// column, each column's rounding error spread over the columns not yet
// rounded so that the projection's *output* error on calibration inputs,
// (w - s q)^T H (w - s q) with H = X^T X, shrinks instead of each weight's
// own error. Rows are independent, so a weight recipe can still be
// evaluated one row block at a time. The record format is unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_GPTQ_H
#define PCCX_HW_NUMERICS_GPTQ_H

#include "hw/numerics/Quantize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pccx::hw {

/// The Gram matrix X^T X of the inputs a projection saw on calibration
/// text: `columns` x `columns`, row-major, summed over `samples` input
/// vectors.
struct InputGram {
  int64_t columns = 0;
  int64_t samples = 0;
  std::vector<double> values;
};

/// Adds `count` input vectors x[count][gram->columns] to the Gram matrix.
void accumulateGram(const float *x, int64_t count, InputGram *gram);

/// What the rounding of one tensor's rows needs from its input statistics.
struct GptqFactor {
  int64_t n = 0;
  /// The order the columns are rounded in: largest H[j][j] first, so the
  /// columns that matter most are rounded while the most columns are left
  /// to absorb their error.
  std::vector<int32_t> order;
  /// H plus the damping, n x n row-major in the original column order: the
  /// objective the result is measured by.
  std::vector<double> hessian;
  /// Upper Cholesky factor U of the damped H^-1 (H^-1 = U^T U), n x n
  /// row-major, rows and columns in `order`.
  std::vector<double> inverseFactor;
};

/// Fraction of the mean of H's diagonal added to the diagonal before it is
/// inverted: keeps H invertible when the calibration text does not span
/// every input direction, and keeps some weight fidelity in the objective
/// so the codes do not overfit a short calibration text. Chosen on the
/// demo model (2.7 k calibration tokens, docs/quantization.md): held-out
/// KL 0.0104 with 0.01, 0.0088 with 0.1, 0.0083 with 0.3, 0.0087 with 1.
constexpr double kGptqDamping = 0.3;

/// Builds the factor from an n x n Gram matrix (row-major; symmetric). A
/// column whose input was always zero gets H[j][j] = 1 (it then only
/// affects its own weight). False with a message if H cannot be factored
/// even after raising the damping.
bool makeGptqFactor(const double *gram, int64_t n, GptqFactor *factor,
                    std::string *error);

/// One INT4 row: the scale of `rule` (quantizeRowInt4 / Search), codes by
/// error-compensating rounding in factor.order, then the scale refitted to
/// the least output error for those codes. The result is never worse on
/// the objective than the rule's own (nearest-rounding) codes, which are
/// kept when they are better. Returns the scale; deterministic.
float quantizeRowInt4Gptq(const float *row, size_t n, ScaleRule rule,
                          const GptqFactor &factor, int8_t *q);

/// (row - scale q)^T H (row - scale q) with factor.hessian.
double gptqOutputError(const float *row, size_t n, float scale, const int8_t *q,
                       const GptqFactor &factor);

} // namespace pccx::hw

#endif
