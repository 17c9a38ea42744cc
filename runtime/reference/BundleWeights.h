//===- BundleWeights.h - a bundle's weights in checkpoint layout -*- C++ -*-===//
//
// The weights a compiled bundle computes with, presented under the original
// checkpoint names and layouts: INT4 records and gather tables are
// dequantized, and gains the compiler folded into a projection are divided
// back out of its columns. Tensors the bundle keeps exact come from the
// checkpoint. Running the float reference on these weights isolates lowering
// errors from quantization error (numerics.md); exporting them gives users a
// checkpoint that computes what the NPU computes.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_BUNDLEWEIGHTS_H
#define PCCX_RUNTIME_REFERENCE_BUNDLEWEIGHTS_H

#include "runtime/reference/Reference.h"
#include "hw/numerics/Quantize.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ModelManifest.h"

#include <map>
#include <memory>

namespace pccx::reference {

/// The storage format of a manifest recipe {quantize, scheme}; false when
/// the recipe is not quantized or names an unknown scheme.
bool recipeFormat(const nlohmann::json &recipe, hw::WeightFormat *format);

/// Packed codes and their scales in a bundle: a weight record's rows (one
/// scale per row; with group scales, one record per group of columns) or a
/// quantized gather table's (its scheme's groups in each row).
struct PackedRows {
  hw::WeightFormat format = hw::WeightFormat::Int4;
  const uint8_t *codes = nullptr; ///< packed rows
  int64_t rowStride = 0;          ///< bytes between rows
  const float *scales = nullptr;  ///< `groups` per row
  /// Rows [firstRow, +rows) and columns [firstCol, +cols) of the tensor;
  /// each row has `groups` scales, one per `group` columns.
  int64_t firstRow = 0, rows = 0, firstCol = 0, cols = 0;
  int64_t groups = 1, group = 0;

  /// A record of the weights section; false (with `error`) for an unknown
  /// scheme. `bundle`'s manifest placed it inside the section.
  static bool fromRecord(const bundle::Bundle &bundle,
                         const bundle::WeightRecordEntry &r, PackedRows *out,
                         std::string *error);
  /// A quantized gather table; false for a float32 one.
  static bool fromGather(const bundle::Bundle &bundle,
                         const bundle::GatherEntry &g, PackedRows *out);
  bool holds(int64_t row) const {
    return row >= firstRow && row < firstRow + rows;
  }
  /// Row `row` (held) dequantized into its columns of `tensorRow`.
  void unpack(int64_t row, float *tensorRow) const;
};

class BundleWeights : public Weights {
public:
  /// `base` supplies the unfolding gains and every tensor the bundle does
  /// not quantize; `prefix` is the checkpoint's text-decoder prefix.
  static std::unique_ptr<BundleWeights>
  create(const bundle::Bundle &bundle, const Weights &base,
         const std::string &prefix, std::string *error);

  bool readRows(const std::string &name, int64_t row, int64_t count,
                int64_t columns, float *out,
                std::string *error) const override;

  /// Relative names of the tensors this source changes (quantized ones).
  std::vector<std::string> quantizedTensors() const;

private:
  struct Source : PackedRows {
    std::string divideBy; ///< relative name of a folded gain, or empty
    float factor = 1.0f;
  };
  BundleWeights(const Weights &base) : base_(base) {}
  const Weights &base_;
  std::multimap<std::string, Source> sources_; ///< by relative name
};

} // namespace pccx::reference

#endif
