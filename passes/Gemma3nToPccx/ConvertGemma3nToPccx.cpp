//===- ConvertGemma3nToPccx.cpp - NPU/host partition of gemma3n -----------===//
//
// Lowers each gemma3n function to a pccx.program (docs/lowering.md). The
// work per op lives with its family in this folder; LoweringState.h is the
// state they share.
//
//===----------------------------------------------------------------------===//

#include "passes/Gemma3nToPccx/LoweringState.h"

namespace pccx {
#define GEN_PASS_DEF_CONVERTGEMMA3NTOPCCX
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::lowering;

struct ConvertGemma3nToPccxPass
    : pccx::impl::ConvertGemma3nToPccxBase<ConvertGemma3nToPccxPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!module->hasAttrOfType<pccx::gemma3n::KvSharingResolvedAttr>(
            pccx::kKvSharingAttr)) {
      module.emitError("KV sharing is not resolved; run "
                       "gemma3n-resolve-kv-sharing before "
                       "convert-gemma3n-to-pccx");
      return signalPassFailure();
    }
    if (prefillRows < 1 || prefillRows > 65535) {
      module.emitError() << "prefill-rows must be in [1, 65535], got "
                         << int64_t(prefillRows);
      return signalPassFailure();
    }
    if (decodeBatch < 1 || decodeBatch > 256) {
      module.emitError() << "decode-batch must be in [1, 256], got "
                         << int64_t(decodeBatch);
      return signalPassFailure();
    }
    // The lowering and the machine passes ask the target (pccx.target).
    pccx::dialect::setTarget(module, target);
    pccx::import::Gemma3nTextConfig config;
    std::string error;
    if (!pccx::moduleConfig(module, &config, &error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    std::map<std::string, pccx::dialect::RecipeAttr> hostTensors, gathers;
    const int64_t maxStepRows =
        std::max<int64_t>(prefillRows, decodeBatch);
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(pccx::kFunctionKindAttr))
        functions.push_back(fn);
    for (func::FuncOp fn : functions) {
      ProgramLowering lowering(module, fn, config, prefillRows, maxStepRows,
                               attention == pccx::Attention::Npu, hostTensors, gathers);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
    // The batch programs are the prefill function with independent rows:
    // one of decode-batch rows and one of each power of two below it, so
    // a step of fewer sequences runs the smallest that holds them.
    SmallVector<int64_t> batchRows;
    for (int64_t rows = 2; rows < decodeBatch; rows *= 2)
      batchRows.push_back(rows);
    if (decodeBatch > 1)
      batchRows.push_back(decodeBatch);
    // The prefill function again without its LM head: the steps of a
    // prompt whose logits are not read (every one but the last) stream
    // neither the head nor copy, cap and emit its rows.
    for (func::FuncOp fn : functions) {
      auto kind = fn->getAttrOfType<StringAttr>(pccx::kFunctionKindAttr);
      if (!kind || kind.getValue() != "prefill")
        continue;
      ProgramLowering lowering(module, fn, config, prefillRows, maxStepRows,
                               attention == pccx::Attention::Npu, hostTensors, gathers,
                               /*batchRows=*/0, /*withoutLogits=*/true);
      if (failed(lowering.run()))
        return signalPassFailure();
    }
    for (int64_t rows : batchRows)
      for (func::FuncOp fn : functions) {
        auto kind = fn->getAttrOfType<StringAttr>(pccx::kFunctionKindAttr);
        if (!kind || kind.getValue() != "prefill")
          continue;
        ProgramLowering lowering(module, fn, config, prefillRows,
                                 maxStepRows, attention == pccx::Attention::Npu, hostTensors,
                                 gathers, rows);
        if (failed(lowering.run()))
          return signalPassFailure();
      }
    Builder b(module.getContext());
    SmallVector<NamedAttribute> tensors, tables;
    for (auto &[name, recipe] : hostTensors)
      tensors.push_back(b.getNamedAttr(name, recipe));
    for (auto &[name, recipe] : gathers)
      tables.push_back(b.getNamedAttr(name, recipe));
    module->setAttr("pccx.host_tensors", b.getDictionaryAttr(tensors));
    module->setAttr("pccx.gather_tables", b.getDictionaryAttr(tables));
    for (func::FuncOp fn : functions)
      fn.erase();
  }
};

} // namespace
