//===- WeightEvaluator.h - values of weight expressions ---------*- C++ -*-===//
//
// Weights in gemma3n IR are expressions over checkpoint tensors:
// gemma3n.weight (a tensor, by name), gemma3n.scale_weight and
// gemma3n.quantize. This evaluates them row block by row block straight from
// the mapped checkpoint, so passes and the emitter can use transformed
// weights without ever holding a whole model in memory.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_MODEL_WEIGHTEVALUATOR_H
#define PCCX_COMPILER_MODEL_WEIGHTEVALUATOR_H

#include "compiler/import/Safetensors.h"
#include "dialects/Gemma3n/Gemma3nOps.h"
#include "hw/numerics/Quantize.h"

#include <string>

namespace pccx {

/// True if `value` is a weight expression the evaluator understands.
bool isWeightExpression(mlir::Value value);

/// The checkpoint tensor at the root of a weight expression (following the
/// weight operand of scale_weight / quantize); null if there is none.
gemma3n::WeightOp rootWeight(mlir::Value value);

/// A weight expression as a self-contained attribute, so that lowered
/// programs can name their weights without keeping the gemma3n ops:
///   {tensor = "<checkpoint tensor>"}
///   {scale = <recipe>, by = <recipe>?, factor = f32}
///   {quantize = <recipe>, scheme = "int4_per_row" | "int4_per_row_search"
///                                  | "int8_per_row"}
/// Equal expressions give equal (uniqued) attributes.
mlir::DictionaryAttr weightRecipe(mlir::Value value);

/// The storage format of a quantized recipe ({quantize, scheme}); false for
/// a recipe that is not quantized or names an unknown scheme.
bool recipeFormat(mlir::DictionaryAttr recipe, hw::WeightFormat *format);
/// The same with the scale rule: what quantizes the recipe's rows.
bool recipeScheme(mlir::DictionaryAttr recipe, hw::QuantScheme *scheme);

class WeightEvaluator {
public:
  explicit WeightEvaluator(const import::Checkpoint &checkpoint)
      : checkpoint_(checkpoint) {}

  /// Rows [row, row + count) of `value` as float32 into out[count * columns]
  /// (a 1-D weight is a single row). Errors name the tensor and the op.
  bool readRows(mlir::Value value, int64_t row, int64_t count, float *out,
                std::string *error) const;

  /// The same for a recipe (weightRecipe()); shapes come from the
  /// checkpoint.
  bool readRows(mlir::DictionaryAttr recipe, int64_t row, int64_t count,
                float *out, std::string *error) const;
  /// The [rows, columns] of a recipe (a 1-D tensor is one row).
  bool shape(mlir::DictionaryAttr recipe, int64_t *rows, int64_t *columns,
             std::string *error) const;

  /// Number of rows and columns `readRows` works with.
  static int64_t rows(mlir::Value value);
  static int64_t columns(mlir::Value value);

private:
  const import::Checkpoint &checkpoint_;
};

} // namespace pccx

#endif
