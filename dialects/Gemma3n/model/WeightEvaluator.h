//===- WeightEvaluator.h - values of weight expressions ---------*- C++ -*-===//
//
// Weights in gemma3n IR are expressions over checkpoint tensors:
// gemma3n.weight (a tensor, by name), gemma3n.scale_weight and
// gemma3n.quantize. This evaluates them row block by row block straight from
// the mapped checkpoint, so passes and the emitter can use transformed
// weights without ever holding a whole model in memory.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_DIALECTS_GEMMA3N_MODEL_WEIGHTEVALUATOR_H
#define PCCX_DIALECTS_GEMMA3N_MODEL_WEIGHTEVALUATOR_H

#include "runtime/import/Safetensors.h"
#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"
#include "hw/numerics/Gptq.h"
#include "hw/numerics/Quantize.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <memory>
#include <string>

namespace pccx {

/// True if `value` is a weight expression the evaluator understands.
bool isWeightExpression(mlir::Value value);

/// The checkpoint tensor at the root of a weight expression (following the
/// weight operand of scale_weight / quantize); null if there is none.
gemma3n::WeightOp rootWeight(mlir::Value value);

/// A weight expression as a self-contained #pccx.recipe, so that lowered
/// programs can name their weights without keeping the gemma3n ops. Equal
/// expressions give equal (uniqued) attributes.
dialect::RecipeAttr weightRecipe(mlir::Value value);

class WeightEvaluator {
public:
  explicit WeightEvaluator(const import::Checkpoint &checkpoint)
      : checkpoint_(checkpoint) {}

  /// The calibration statistics GPTQ rounding needs (by full checkpoint
  /// name, reference/InputStatistics.h); null (the default) when there are
  /// none, and then a recipe with GPTQ rounding is an error.
  void setInputGrams(const std::map<std::string, hw::InputGram> *grams) {
    inputGrams_ = grams;
  }

  /// Scales and codes of `count` rows of the quantize recipe `recipe`,
  /// whose inner recipe's values are values[count * columns]: every
  /// producer of a bundle's codes goes through this. Nearest rounding is
  /// hw::quantizeRow; GPTQ rounding uses the input statistics of the
  /// recipe's tensor, seen through the recipe's column scaling (a tensor
  /// the calibration never multiplied, e.g. a gather-only table, keeps
  /// nearest rounding).
  bool quantizeRows(dialect::RecipeAttr recipe, const float *values,
                    int64_t count, int64_t columns, float *scales,
                    int8_t *codes, std::string *error) const;

  /// Rows [row, row + count) of `value` as float32 into out[count * columns]
  /// (a 1-D weight is a single row). Errors name the tensor and the op.
  bool readRows(mlir::Value value, int64_t row, int64_t count, float *out,
                std::string *error) const;

  /// The same for a recipe (weightRecipe()); shapes come from the
  /// checkpoint.
  bool readRows(dialect::RecipeAttr recipe, int64_t row, int64_t count,
                float *out, std::string *error) const;
  /// The [rows, columns] of a recipe (a 1-D tensor is one row).
  bool shape(dialect::RecipeAttr recipe, int64_t *rows, int64_t *columns,
             std::string *error) const;

  /// Number of rows and columns `readRows` works with.
  static int64_t rows(mlir::Value value);
  static int64_t columns(mlir::Value value);

private:
  /// The GPTQ factor of a quantized recipe's inner recipe; null (and no
  /// error) when its tensor has no statistics.
  const hw::GptqFactor *gptqFactor(dialect::RecipeAttr inner,
                                   std::string *error) const;
  /// The factor each column of `recipe` is multiplied by (its scale_weight
  /// `by` and `factor` terms) relative to its checkpoint tensor.
  bool columnScales(dialect::RecipeAttr recipe, std::vector<double> *scales,
                    std::string *error) const;

  const import::Checkpoint &checkpoint_;
  const std::map<std::string, hw::InputGram> *inputGrams_ = nullptr;
  /// Factors by inner recipe, built on first use (the emitter asks for one
  /// recipe's rows block by block).
  mutable llvm::DenseMap<mlir::Attribute, std::unique_ptr<hw::GptqFactor>>
      factors_;
};

} // namespace pccx

#endif
