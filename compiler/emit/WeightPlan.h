//===- WeightPlan.h - the weights section of a bundle -----------*- C++ -*-===//
//
// The weight records the programs' GEMV/GEMM words consume, in first-use
// order, each stored once: two words that multiply by the same rows of the
// same weight expression share a record. Records are keyed on the recipe
// attribute itself (attributes are uniqued, so equal expressions are the
// same attribute). The section is streamed from the checkpoint, quantized
// on the way, never held whole.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_EMIT_WEIGHTPLAN_H
#define PCCX_COMPILER_EMIT_WEIGHTPLAN_H

#include "dialects/Gemma3n/model/WeightEvaluator.h"
#include "hw/numerics/Quantize.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ModelManifest.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <tuple>
#include <vector>

namespace pccx {

class WeightPlan {
public:
  struct Record {
    dialect::RecipeAttr recipe; ///< quantized
    hw::WeightFormat format = hw::WeightFormat::Int4;
    int64_t firstRow = 0, rows = 0, cols = 0;
    int64_t firstCol = 0; ///< columns [firstCol, firstCol + cols)
    uint64_t offset = 0, bytes = 0;
  };

  explicit WeightPlan(const WeightEvaluator &evaluator)
      : evaluator_(evaluator) {}

  /// Threads that quantize rows while streaming (0 = one per hardware
  /// thread). The bytes written do not depend on it.
  void setThreads(unsigned threads) { threads_ = threads; }

  /// The record of rows [firstRow, firstRow + rows) of `recipe`, of all
  /// its columns or (numCols > 0) of [firstCol, firstCol + numCols), added
  /// at the end of the section if it is new. Null with `*error` set when
  /// the recipe is not quantized with a known scheme or the rows or columns
  /// do not exist.
  const Record *use(dialect::RecipeAttr recipe, int64_t firstRow, int64_t rows,
                    int64_t firstCol, int64_t numCols, std::string *error);

  uint64_t bytes() const { return bytes_; }
  const std::vector<Record> &records() const { return records_; }
  /// The weight table of the manifest.
  std::vector<bundle::WeightRecordEntry> table() const;

  /// Writes every record: scales, then packed rows. `progress` receives the
  /// bytes written so far and the number of records done.
  bool stream(bundle::SectionSink &sink,
              const std::function<void(uint64_t, size_t)> &progress,
              std::string *error) const;

private:
  /// Rows [row, row + n) of record `r` (n rows of r.cols floats at `rows`):
  /// their scales and packed codes in the record's bytes.
  bool packRows(const Record &r, const hw::QuantScheme &scheme,
                const float *rows, int64_t row, int64_t n, uint8_t *record,
                std::vector<int8_t> &codes, std::string *error) const;

  const WeightEvaluator &evaluator_;
  std::vector<Record> records_;
  llvm::DenseMap<std::tuple<mlir::Attribute, int64_t, int64_t, int64_t>,
                 size_t>
      index_;
  uint64_t bytes_ = 0;
  unsigned threads_ = 0;
};

} // namespace pccx

#endif
