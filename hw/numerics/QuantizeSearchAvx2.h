//===- QuantizeSearchAvx2.h - AVX2 form of the INT4 scale search -*- C++
//-*-===//
//
// Internal to Quantize.cpp, which chooses it at run time.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_QUANTIZESEARCHAVX2_H
#define PCCX_HW_NUMERICS_QUANTIZESEARCHAVX2_H

#include <cstddef>
#include <cstdint>

namespace pccx::hw::detail {

/// The bookkeeping both forms of the search share, in one order so their
/// results are identical: the row's squared error against scale·codes is
/// Σw² − 2s·Σwq + s²·Σq², and a candidate's least-squares scale comes from
/// its eight lane sums (Σwq in float, Σq² in int), reduced lane 0 to 7.
class ScaleSearchBest {
public:
  /// Starts from the absmax codes: their Σwq and Σq², and their scale.
  ScaleSearchBest(double rowSquares, double dot, double norm, float scale)
      : rowSquares_(rowSquares), scale_(scale),
        error_(squaredError(dot, norm, scale)) {}
  /// Offers a candidate by its lane sums; true when it becomes the best
  /// (a candidate whose codes are all 0 never does).
  bool offer(const float dots[8], const int32_t norms[8]) {
    double dot = 0;
    int64_t norm = 0;
    for (size_t j = 0; j < 8; ++j) {
      dot += double(dots[j]);
      norm += norms[j];
    }
    if (norm == 0)
      return false;
    const float scale = float(dot / double(norm));
    const double error = squaredError(dot, double(norm), scale);
    if (!(error < error_))
      return false;
    error_ = error;
    scale_ = scale;
    return true;
  }
  float scale() const { return scale_; }

private:
  double squaredError(double dot, double norm, double scale) const {
    return rowSquares_ - 2 * scale * dot + scale * scale * norm;
  }
  double rowSquares_;
  float scale_;
  double error_;
};

/// Whether this build has the AVX2 form and this CPU can run it.
bool haveQuantizeSearchAvx2();
/// quantizeRowInt4Search with the same operations in the same order, eight
/// elements at a time; identical scale and codes.
float quantizeRowInt4SearchAvx2(const float *row, size_t n, int8_t *q);

} // namespace pccx::hw::detail

#endif
