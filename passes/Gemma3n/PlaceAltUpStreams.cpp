//===- PlaceAltUpStreams.cpp - AltUp streams updated in place -------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_PLACEALTUPSTREAMS
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;

/// True if every reader of `v`, directly or through stream views, is `op`
/// itself or comes before it in the block.
bool noLaterReader(Value v, Operation *op) {
  for (Operation *user : v.getUsers()) {
    if (user == op)
      continue;
    if (user->getBlock() != op->getBlock() || !user->isBeforeInBlock(op))
      return false;
    if (auto view = dyn_cast<StreamOp>(user))
      if (!noLaterReader(view.getResult(), op))
        return false;
  }
  return true;
}

struct PlaceAltUpStreamsPass
    : pccx::impl::PlaceAltUpStreamsBase<PlaceAltUpStreamsPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      Value stack;
      if (auto p = dyn_cast<AltUpPredictOp>(op))
        stack = p.getStreams();
      else if (auto c = dyn_cast<AltUpCorrectOp>(op))
        stack = c.getPredictions();
      else if (auto i = dyn_cast<PLEInjectOp>(op))
        stack = i.getStreams();
      else
        return;
      // A function argument's region belongs to the caller.
      if (!stack.getDefiningOp())
        return;
      if (noLaterReader(stack, op))
        op->setAttr("in_place", b.getUnitAttr());
      else
        op->removeAttr("in_place");
    });
  }
};

} // namespace
