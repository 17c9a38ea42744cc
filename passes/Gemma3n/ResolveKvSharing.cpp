//===- ResolveKvSharing.cpp - KV-shared layers read their source ----------===//
//
// docs/gemma3n-semantics.md section 4: layer i >= L - num_kv_shared_layers
// attends over the cache of config.kvSourceLayer(i). The imported module
// gives every layer its own projection and cache; this pass rewires the
// shared layers' attention to the source's cache and removes what they no
// longer need.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"

#include <map>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_RESOLVEKVSHARING
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;

struct ResolveKvSharingPass
    : pccx::impl::ResolveKvSharingBase<ResolveKvSharingPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module->hasAttrOfType<pccx::gemma3n::KvSharingResolvedAttr>(
            pccx::kKvSharingAttr))
      return;
    pccx::import::Gemma3nTextConfig config;
    std::string error;
    if (!pccx::moduleConfig(module, &config, &error)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(pccx::kFunctionKindAttr) &&
          failed(resolve(fn, config)))
        return signalPassFailure();
    module->setAttr(pccx::kKvSharingAttr,
                    pccx::gemma3n::KvSharingResolvedAttr::get(
                        module.getContext()));
  }

  LogicalResult resolve(func::FuncOp fn,
                        const pccx::import::Gemma3nTextConfig &config) {
    std::map<int64_t, AttentionOp> attention;
    for (AttentionOp op : fn.getOps<AttentionOp>())
      attention[int64_t(op.getLayer())] = op;
    auto returnOp = cast<func::ReturnOp>(fn.getBody().front().getTerminator());

    llvm::BitVector deadArgs(fn.getNumArguments());
    llvm::BitVector deadResults(fn.getNumResults());
    for (int64_t i = config.firstKvSharedLayer(); i < config.num_hidden_layers;
         ++i) {
      int64_t source = config.kvSourceLayer(i);
      auto it = attention.find(i), src = attention.find(source);
      if (it == attention.end() || src == attention.end())
        return fn.emitError() << "the config makes layer " << i
                              << " KV-shared with layer " << source
                              << ", but the function has no attention op of "
                                 "layer "
                              << (it == attention.end() ? i : source);
      AttentionOp shared = it->second;
      if (int64_t(shared.getKvLayer()) == source)
        continue; // already reads its source
      if (int64_t(shared.getKvLayer()) != i)
        return shared.emitOpError()
               << "reads the cache of layer " << shared.getKvLayer()
               << ", but the config makes it share layer " << source;

      // The shared layer's own cache chain: cache argument -> write -> use.
      for (Value cache : {shared.getKCache(), shared.getVCache()}) {
        auto write = cache.getDefiningOp<KVCacheWriteOp>();
        if (!write || int64_t(write.getLayer()) != i)
          return shared.emitOpError()
                 << "expects its own cache written by layer " << i
                 << " (kv_cache.write) before it";
        for (OpOperand &use : write.getResult().getUses()) {
          if (use.getOwner() == returnOp)
            deadResults.set(use.getOperandNumber());
          else if (use.getOwner() != shared)
            return write.emitOpError()
                   << "of KV-shared layer " << i
                   << " has a user other than its attention and the return";
        }
        auto arg = dyn_cast<BlockArgument>(write.getCache());
        if (!arg || !write.getCache().hasOneUse())
          return write.emitOpError() << "of KV-shared layer " << i
                                     << " must write a cache argument that "
                                        "nothing else uses";
        deadArgs.set(arg.getArgNumber());
      }
      shared.getKCacheMutable().assign(src->second.getKCache());
      shared.getVCacheMutable().assign(src->second.getVCache());
      shared.setKvLayer(uint64_t(source));
    }
    // Drop the shared layers' results, then their now unused writes,
    // projections and weights, then their cache arguments.
    SmallVector<Value> kept;
    for (unsigned r = 0; r < returnOp.getNumOperands(); ++r)
      if (!deadResults.test(r))
        kept.push_back(returnOp.getOperand(r));
    returnOp->setOperands(kept);
    fn.eraseResults(deadResults);
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : llvm::make_early_inc_range(fn.getOps()))
        if (isa<KVCacheWriteOp, KVProjectOp, WeightOp>(op) && op.use_empty()) {
          op.erase();
          changed = true;
        }
    }
    fn.eraseArguments(deadArgs);
    return success();
  }
};

} // namespace
