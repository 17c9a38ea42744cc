//===- WeightEvaluator.cpp - values of weight expressions -----------------===//

#include "dialects/Gemma3n/model/WeightEvaluator.h"

#include "hw/numerics/Quantize.h"

#include <vector>

using namespace mlir;
using pccx::dialect::RecipeAttr;

namespace pccx {

bool isWeightExpression(Value value) {
  Operation *op = value.getDefiningOp();
  return op && llvm::isa<gemma3n::WeightOp, gemma3n::ScaleWeightOp,
                   gemma3n::QuantizeOp>(op);
}

gemma3n::WeightOp rootWeight(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (auto w = dyn_cast<gemma3n::WeightOp>(op))
      return w;
    if (auto s = dyn_cast<gemma3n::ScaleWeightOp>(op))
      value = s.getWeight();
    else if (auto q = dyn_cast<gemma3n::QuantizeOp>(op))
      value = q.getWeight();
    else
      return nullptr;
  }
  return nullptr;
}

RecipeAttr weightRecipe(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op)
    return nullptr;
  if (auto w = dyn_cast<gemma3n::WeightOp>(op))
    return RecipeAttr::getTensor(value.getContext(), w.getNameAttr());
  if (auto s = dyn_cast<gemma3n::ScaleWeightOp>(op)) {
    RecipeAttr inner = weightRecipe(s.getWeight());
    RecipeAttr by = s.getBy() ? weightRecipe(s.getBy()) : RecipeAttr();
    if (!inner || (s.getBy() && !by))
      return nullptr;
    return RecipeAttr::getScaled(inner, by, s.getFactorAttr());
  }
  if (auto q = dyn_cast<gemma3n::QuantizeOp>(op)) {
    RecipeAttr inner = weightRecipe(q.getWeight());
    return inner ? RecipeAttr::getQuantized(inner, q.getSchemeAttr())
                 : nullptr;
  }
  return nullptr;
}

bool WeightEvaluator::shape(RecipeAttr recipe, int64_t *rows,
                            int64_t *columns, std::string *error) const {
  if (StringAttr name = recipe.getTensor()) {
    const import::TensorView *view = checkpoint_.find(name.str());
    if (!view) {
      *error = checkpoint_.source() + ": no tensor '" + name.str() + "'";
      return false;
    }
    if (view->shape.empty() || view->shape.size() > 2) {
      *error = view->file + ": tensor '" + name.str() +
               "' is not a vector or matrix";
      return false;
    }
    *rows = view->shape.size() == 2 ? view->shape[0] : 1;
    *columns = view->shape.back();
    return true;
  }
  // The verifier guarantees one of the three forms.
  return shape(recipe.getScale() ? recipe.getScale() : recipe.getQuantize(),
               rows, columns, error);
}

bool WeightEvaluator::readRows(RecipeAttr recipe, int64_t row,
                               int64_t count, float *out,
                               std::string *error) const {
  int64_t rows = 0, cols = 0;
  if (!shape(recipe, &rows, &cols, error))
    return false;
  if (row < 0 || count < 0 || row + count > rows) {
    *error = "rows [" + std::to_string(row) + ", " +
             std::to_string(row + count) + ") outside a weight of " +
             std::to_string(rows) + " rows";
    return false;
  }
  if (StringAttr name = recipe.getTensor())
    return import::convertToFloat(*checkpoint_.find(name.str()),
                                  uint64_t(row * cols), uint64_t(count * cols),
                                  out, error);
  if (RecipeAttr inner = recipe.getScale()) {
    if (!readRows(inner, row, count, out, error))
      return false;
    std::vector<float> by(size_t(cols), 1.0f);
    if (RecipeAttr byRecipe = recipe.getBy()) {
      int64_t byRows = 0, byCols = 0;
      if (!shape(byRecipe, &byRows, &byCols, error))
        return false;
      if (byRows != 1 || byCols != cols) {
        *error = "weight recipe scales " + std::to_string(cols) +
                 " columns by a tensor of shape [" + std::to_string(byRows) +
                 ", " + std::to_string(byCols) + "]";
        return false;
      }
      if (!readRows(byRecipe, 0, 1, by.data(), error))
        return false;
    }
    const float factor = float(recipe.getFactor().getValueAsDouble());
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = out[r * cols + c] * by[size_t(c)] * factor;
    return true;
  }
  if (RecipeAttr inner = recipe.getQuantize()) {
    hw::QuantScheme scheme;
    if (!recipe.quantScheme(&scheme)) {
      *error = "weight recipe has an unknown quantization scheme";
      return false;
    }
    if (!readRows(inner, row, count, out, error))
      return false;
    if (scheme.rounding == hw::Rounding::Nearest) {
      for (int64_t r = 0; r < count; ++r)
        hw::fakeQuantizeRow(scheme, out + r * cols, size_t(cols));
      return true;
    }
    std::vector<float> scales(static_cast<size_t>(count));
    std::vector<int8_t> codes(size_t(count * cols));
    if (!quantizeRows(recipe, out, count, cols, scales.data(), codes.data(),
                      error))
      return false;
    for (int64_t i = 0; i < count * cols; ++i)
      out[i] = float(codes[size_t(i)]) * scales[size_t(i / cols)];
    return true;
  }
  *error = "malformed weight recipe";
  return false;
}

bool WeightEvaluator::columnScales(RecipeAttr recipe,
                                   std::vector<double> *scales,
                                   std::string *error) const {
  if (recipe.getTensor())
    return true;
  RecipeAttr inner = recipe.getScale();
  if (!inner) {
    *error = "GPTQ rounding of a weight recipe that is neither a tensor nor a "
             "scaled tensor";
    return false;
  }
  if (!columnScales(inner, scales, error))
    return false;
  std::vector<float> by(scales->size(), 1.0f);
  if (RecipeAttr byRecipe = recipe.getBy())
    if (!readRows(byRecipe, 0, 1, by.data(), error))
      return false;
  const float factor = float(recipe.getFactor().getValueAsDouble());
  for (size_t c = 0; c < scales->size(); ++c)
    (*scales)[c] *= double(by[c] * factor);
  return true;
}

const hw::GptqFactor *WeightEvaluator::gptqFactor(RecipeAttr inner,
                                                  std::string *error) const {
  auto it = factors_.find(inner);
  if (it != factors_.end())
    return it->second.get();
  std::string name = inner.rootTensor().str();
  auto gram = inputGrams_->find(name);
  std::unique_ptr<hw::GptqFactor> factor;
  if (gram != inputGrams_->end()) {
    int64_t rows = 0, cols = 0;
    if (!shape(inner, &rows, &cols, error))
      return nullptr;
    if (gram->second.columns != cols) {
      *error = "calibration statistics of '" + name + "' have " +
               std::to_string(gram->second.columns) + " columns, the tensor " +
               std::to_string(cols);
      return nullptr;
    }
    // The recipe multiplies input u = x / c when the checkpoint tensor
    // multiplies x and the recipe scales column j by c[j]: its Gram matrix
    // is diag(1/c) X^T X diag(1/c).
    std::vector<double> c(size_t(cols), 1.0);
    if (!columnScales(inner, &c, error))
      return nullptr;
    std::vector<double> g = gram->second.values;
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const double d = c[size_t(i)] * c[size_t(j)];
        double &v = g[size_t(i * cols + j)];
        v = d != 0 ? v / d : 0.0;
      }
    factor = std::make_unique<hw::GptqFactor>();
    if (!hw::makeGptqFactor(g.data(), cols, factor.get(), error)) {
      *error = name + ": " + *error;
      return nullptr;
    }
  }
  return (factors_[inner] = std::move(factor)).get();
}

bool WeightEvaluator::quantizeRows(RecipeAttr recipe, const float *values,
                                   int64_t count, int64_t columns,
                                   float *scales, int8_t *codes,
                                   std::string *error) const {
  hw::QuantScheme scheme;
  if (!recipe.quantScheme(&scheme)) {
    *error = "weight recipe has an unknown quantization scheme";
    return false;
  }
  const hw::GptqFactor *factor = nullptr;
  if (scheme.rounding == hw::Rounding::Gptq) {
    if (!inputGrams_) {
      *error = "weight recipe with GPTQ rounding (" +
               std::string(hw::schemeName(scheme)) +
               ") but no calibration statistics: compile with pccx-compile "
               "--int4-rounding gptq --calibration FILE";
      return false;
    }
    error->clear();
    factor = gptqFactor(recipe.getQuantize(), error);
    if (!factor && !error->empty())
      return false;
  }
  for (int64_t r = 0; r < count; ++r)
    scales[r] = factor ? hw::quantizeRowInt4Gptq(values + r * columns,
                                                 size_t(columns), scheme.scales,
                                                 *factor, codes + r * columns)
                       : hw::quantizeRow(scheme, values + r * columns,
                                         size_t(columns), codes + r * columns);
  return true;
}

int64_t WeightEvaluator::rows(Value value) {
  auto shape = cast<RankedTensorType>(value.getType()).getShape();
  return shape.size() == 2 ? shape[0] : 1;
}

int64_t WeightEvaluator::columns(Value value) {
  auto shape = cast<RankedTensorType>(value.getType()).getShape();
  return shape.empty() ? 1 : shape.back();
}

bool WeightEvaluator::readRows(Value value, int64_t row, int64_t count,
                               float *out, std::string *error) const {
  const int64_t cols = columns(value);
  if (row < 0 || count < 0 || row + count > rows(value)) {
    *error = "rows [" + std::to_string(row) + ", " +
             std::to_string(row + count) + ") outside a weight of " +
             std::to_string(rows(value)) + " rows";
    return false;
  }
  Operation *op = value.getDefiningOp();
  if (auto w = dyn_cast_or_null<gemma3n::WeightOp>(op)) {
    const import::TensorView *view = checkpoint_.find(w.getName().str());
    if (!view) {
      *error = checkpoint_.source() + ": no tensor '" + w.getName().str() +
               "' (named by a gemma3n.weight op)";
      return false;
    }
    if (view->shape !=
        std::vector<int64_t>(cast<RankedTensorType>(value.getType())
                                 .getShape()
                                 .begin(),
                             cast<RankedTensorType>(value.getType())
                                 .getShape()
                                 .end())) {
      *error = view->file + ": tensor '" + w.getName().str() + "' has shape " +
               import::formatShape(view->shape) +
               ", not the shape its gemma3n.weight op declares";
      return false;
    }
    return import::convertToFloat(*view, uint64_t(row * cols),
                                  uint64_t(count * cols), out, error);
  }
  if (auto s = dyn_cast_or_null<gemma3n::ScaleWeightOp>(op)) {
    if (!readRows(s.getWeight(), row, count, out, error))
      return false;
    std::vector<float> by(size_t(cols), 1.0f);
    if (s.getBy() && !readRows(s.getBy(), 0, 1, by.data(), error))
      return false;
    float factor = s.getFactor().convertToFloat();
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = out[r * cols + c] * by[size_t(c)] * factor;
    return true;
  }
  if (auto q = dyn_cast_or_null<gemma3n::QuantizeOp>(op)) {
    hw::QuantScheme scheme;
    if (!hw::parseScheme(q.getScheme().str(), &scheme)) {
      *error = "unknown quantization scheme '" + q.getScheme().str() + "'";
      return false;
    }
    if (scheme.rounding != hw::Rounding::Nearest)
      return readRows(weightRecipe(value), row, count, out, error);
    if (!readRows(q.getWeight(), row, count, out, error))
      return false;
    for (int64_t r = 0; r < count; ++r)
      hw::fakeQuantizeRow(scheme, out + r * cols, size_t(cols));
    return true;
  }
  *error = "value is not a weight expression (gemma3n.weight, "
           "gemma3n.scale_weight or gemma3n.quantize)";
  return false;
}

} // namespace pccx
