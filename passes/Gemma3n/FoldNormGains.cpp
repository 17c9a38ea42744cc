//===- FoldNormGains.cpp - static RMSNorm gains into projections ----------===//
//
// W . (n * g) = (W * diag(g)) . n. The gain moves into the weights, which
// the emitter evaluates row by row, and the NPU skips an element-wise
// multiply the ISA cannot express (it would be a host op).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_FOLDNORMGAINS
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;

/// Is `table` also the table of an embedding lookup (a tied LM head)?
bool isEmbeddingTable(Value table) {
  for (Operation *user : table.getUsers())
    if (isa<EmbedOp>(user))
      return true;
  return false;
}

struct FoldNormGainsPass : pccx::impl::FoldNormGainsBase<FoldNormGainsPass> {
  void runOnOperation() override {
    SmallVector<RMSNormOp> norms;
    getOperation().walk([&](RMSNormOp op) {
      if (op.getGain())
        norms.push_back(op);
    });
    for (RMSNormOp norm : norms)
      fold(norm);
  }

  /// Folds the gain of `norm` if every user is a projection reading the
  /// normalised value as its input; otherwise leaves it.
  void fold(RMSNormOp norm) {
    Value out = norm.getResult(), gain = norm.getGain();
    if (out.use_empty())
      return;
    for (OpOperand &use : out.getUses()) {
      Operation *user = use.getOwner();
      if (auto ffn = dyn_cast<FFNOp>(user)) {
        if (use.getOperandNumber() != 0)
          return;
      } else if (auto head = dyn_cast<LMHeadOp>(user)) {
        // A tied head shares its table with the embedding lookup, which
        // must keep the original rows.
        if (use.getOperandNumber() != 0 || isEmbeddingTable(head.getTable()))
          return;
      } else {
        return;
      }
    }
    OpBuilder b(norm);
    auto scaled = [&](Value weight) -> Value {
      b.setInsertionPointAfterValue(weight);
      if (gain.getDefiningOp() &&
          !gain.getDefiningOp()->isBeforeInBlock(weight.getDefiningOp()) &&
          gain.getDefiningOp() != weight.getDefiningOp())
        b.setInsertionPointAfterValue(gain);
      auto type = RankedTensorType::get(
          cast<RankedTensorType>(weight.getType()).getShape(), b.getF32Type());
      return b.create<ScaleWeightOp>(weight.getLoc(), type, weight, gain,
                                     b.getF32FloatAttr(1.0f));
    };
    for (Operation *user : llvm::make_early_inc_range(out.getUsers())) {
      if (auto ffn = dyn_cast<FFNOp>(user)) {
        ffn.getGateMutable().assign(scaled(ffn.getGate()));
        ffn.getUpMutable().assign(scaled(ffn.getUp()));
      } else if (auto head = dyn_cast<LMHeadOp>(user)) {
        head.getTableMutable().assign(scaled(head.getTable()));
      }
    }
    norm.getGainMutable().clear();
  }
};

} // namespace
