//===- QuantizeWeights.cpp - INT4 weights by the datatype policy ----------===//

#include "passes/Passes.h"

#include "runtime/import/Gemma3nConfig.h"
#include "dialects/Gemma3n/model/ModelInfo.h"
#include "dialects/Gemma3n/model/WeightEvaluator.h"
#include "hw/numerics/Quantize.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_QUANTIZEWEIGHTS
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;

struct QuantizeWeightsPass
    : pccx::impl::QuantizeWeightsBase<QuantizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto prefixAttr = module->getAttrOfType<StringAttr>(pccx::kPrefixAttr);
    std::string prefix = prefixAttr ? prefixAttr.str() : "";
    // Anchored: the expression names whole tensors.
    llvm::Regex int8("^(" + int8Weights + ")$");
    std::string regexError;
    if (!int8Weights.empty() && !int8.isValid(regexError)) {
      module.emitError() << "int8-weights: invalid regular expression '"
                         << int8Weights << "': " << regexError;
      return signalPassFailure();
    }
    const pccx::hw::ScaleRule int4Rule = int4Scales;
    const pccx::hw::Rounding int4Round = int4Rounding;
    if (std::string why = pccx::hw::checkGroup(int4Group); !why.empty()) {
      module.emitError() << "int4-group: " << why;
      return signalPassFailure();
    }
    if (quantReport && int4Round != pccx::hw::Rounding::Nearest) {
      // GPTQ codes depend on calibration statistics the pass does not have.
      module.emitError() << "quant-report: the quantization report measures "
                            "nearest rounding; it cannot be combined with "
                            "int4-rounding="
                         << pccx::choiceName(int4Round);
      return signalPassFailure();
    }

    // Every weight expression feeding a model op, once per value.
    llvm::MapVector<Value, SmallVector<OpOperand *>> uses;
    module.walk([&](Operation *op) {
      if (isa<WeightOp, ScaleWeightOp, QuantizeOp>(op))
        return;
      for (OpOperand &operand : op->getOpOperands())
        if (pccx::isWeightExpression(operand.get()))
          uses[operand.get()].push_back(&operand);
    });

    SmallVector<QuantizeOp> created;
    for (auto &[value, operands] : uses) {
      WeightOp root = pccx::rootWeight(value);
      if (!root || cast<RankedTensorType>(value.getType()).getRank() != 2)
        continue;
      std::string name = root.getName().str();
      if (name.compare(0, prefix.size(), prefix) == 0 &&
          name != "lm_head.weight")
        name = name.substr(prefix.size());
      const bool int8ByDefault =
          !int4StreamProjections && pccx::import::isInt8ByDefault(name);
      if (!pccx::import::isInt4ByDefault(name) &&
          !pccx::import::isInt8ByDefault(name))
        continue;
      OpBuilder b(value.getContext());
      b.setInsertionPointAfterValue(value);
      auto type = RankedTensorType::get(
          cast<RankedTensorType>(value.getType()).getShape(), b.getF32Type());
      pccx::hw::QuantScheme scheme{pccx::hw::WeightFormat::Int4, int4Rule,
                                   int4Round, int4Group};
      if (int8ByDefault || (!int8Weights.empty() && int8.match(name)))
        scheme = {pccx::hw::WeightFormat::Int8, pccx::hw::ScaleRule::AbsMax};
      auto q =
          b.create<QuantizeOp>(value.getLoc(), type, value,
                               b.getStringAttr(pccx::hw::schemeName(scheme)));
      for (OpOperand *operand : operands)
        operand->set(q);
      created.push_back(q);
    }
    if (quantReport && failed(emitReport(module, created)))
      signalPassFailure();
  }

  /// ||W - Q(W)|| / ||W|| of every quantized tensor, streamed from the
  /// checkpoint in row blocks.
  LogicalResult emitReport(ModuleOp module, ArrayRef<QuantizeOp> ops) {
    pccx::LoadedCheckpoint checkpoint;
    std::string error;
    if (!pccx::loadModuleCheckpoint(module, &checkpoint, &error))
      return module.emitError() << "quantization report: " << error;
    pccx::WeightEvaluator evaluator(*checkpoint.checkpoint);
    // Tensors quantized in several functions are measured once.
    std::map<std::string, std::pair<double, int64_t>> measured;
    for (QuantizeOp q : ops) {
      Value w = q.getWeight();
      pccx::hw::QuantScheme scheme;
      if (!pccx::hw::parseScheme(q.getScheme().str(), &scheme))
        return q.emitOpError("unknown quantization scheme");
      const pccx::hw::WeightFormat format = scheme.format;
      int64_t rows = pccx::WeightEvaluator::rows(w);
      int64_t cols = pccx::WeightEvaluator::columns(w);
      std::string key;
      llvm::raw_string_ostream keyStream(key);
      keyStream << pccx::weightRecipe(w);
      auto it = measured.find(key);
      if (it == measured.end()) {
        const int64_t block = std::max<int64_t>(1, (1 << 20) / cols);
        std::vector<float> buf(size_t(std::min(rows, block) * cols));
        double errSq = 0, normSq = 0;
        int64_t nonFinite = 0;
        for (int64_t r = 0; r < rows; r += block) {
          int64_t n = std::min(block, rows - r);
          if (!evaluator.readRows(w, r, n, buf.data(), &error))
            return q.emitOpError() << error;
          for (int64_t i = 0; i < n; ++i) {
            float *row = buf.data() + i * cols;
            // A NaN or Inf poisons its row's scale: such rows are counted
            // and left out of the error rather than reported as "0".
            const int64_t bad = std::count_if(
                row, row + cols, [](float v) { return !std::isfinite(v); });
            if (bad) {
              nonFinite += bad;
              continue;
            }
            std::vector<float> fq(row, row + cols);
            pccx::hw::fakeQuantizeRow(scheme, fq.data(), size_t(cols));
            for (int64_t c = 0; c < cols; ++c) {
              double d = double(fq[size_t(c)]) - double(row[c]);
              errSq += d * d;
              normSq += double(row[c]) * double(row[c]);
            }
          }
        }
        double rel = normSq > 0 ? std::sqrt(errSq / normSq) : 0.0;
        it = measured.emplace(key, std::make_pair(rel, rows * cols)).first;
        char text[64];
        std::snprintf(text, sizeof text, "%.6f", rel);
        q.emitRemark() << (format == pccx::hw::WeightFormat::Int8 ? "int8"
                                                                  : "int4")
                       << " relative error " << text << " over " << rows * cols
                       << " weights (" << pccx::rootWeight(w).getName() << ")"
                       << (nonFinite ? ", " + std::to_string(nonFinite) +
                                           " non-finite (their rows left out)"
                                     : std::string());
      }
    }
    return success();
  }
};

} // namespace
