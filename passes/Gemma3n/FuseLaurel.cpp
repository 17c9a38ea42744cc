//===- FuseLaurel.cpp - LAuReL merged into the attention residual ---------===//
//
// combine(act, rms(attn, g), laurel(xn, L, R, g_l)) * s
//   = (act + xn) * s + rms(attn, g * s) + rms(R . L . xn, g_l * s)
// because an RMSNorm's output is linear in its gain. One op then carries
// the whole residual sum, so the lowering can accumulate it in one place
// and project L . xn together with Q/K/V (same input vector).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_FUSELAUREL
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

using namespace pccx::gemma3n;

struct FuseLaurelPass : pccx::impl::FuseLaurelBase<FuseLaurelPass> {
  void runOnOperation() override {
    SmallVector<CombineOp> sums;
    getOperation().walk([&](CombineOp op) {
      if (op.getInputs().size() == 3)
        sums.push_back(op);
    });
    for (CombineOp sum : sums)
      fuse(sum);
  }

  void fuse(CombineOp sum) {
    LaurelOp laurel;
    RMSNormOp attnNorm;
    Value act;
    for (Value input : sum.getInputs()) {
      if (auto l = input.getDefiningOp<LaurelOp>(); l && !laurel)
        laurel = l;
      else if (auto n = input.getDefiningOp<RMSNormOp>();
               n && n.getGain() && !attnNorm)
        attnNorm = n;
      else if (!act)
        act = input;
      else
        return;
    }
    if (!laurel || !attnNorm || !act || !laurel->hasOneUse() ||
        !attnNorm->hasOneUse() ||
        laurel.getEps() != attnNorm.getEps())
      return;

    OpBuilder b(sum);
    FloatAttr scale = sum.getScaleAttr();
    auto scaledGain = [&](Value gain) -> Value {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(gain);
      auto type = RankedTensorType::get(
          cast<RankedTensorType>(gain.getType()).getShape(), b.getF32Type());
      return b.create<ScaleWeightOp>(gain.getLoc(), type, gain, Value(),
                                     scale);
    };
    Value attnGain = scaledGain(attnNorm.getGain());
    Value laurelGain = scaledGain(laurel.getNorm());
    auto fused = b.create<LaurelResidualOp>(
        FusedLoc::get(b.getContext(), {laurel.getLoc(), sum.getLoc()}),
        sum.getType(), act, attnNorm.getInput(), laurel.getInput(),
        laurel.getLeft(), laurel.getRight(), attnGain, laurelGain, scale,
        laurel.getEpsAttr());
    if (Attribute layer = sum->getAttr(pccx::kLayerAttr))
      fused->setAttr(pccx::kLayerAttr, layer);
    sum.replaceAllUsesWith(fused.getResult());
    sum.erase();
    laurel.erase();
    attnNorm.erase();
  }
};

} // namespace
