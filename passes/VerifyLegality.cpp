//===- VerifyLegality.cpp - every instruction encodes ---------------------===//

#include "passes/Passes.h"

#include "hw/isa/Isa.h"

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_VERIFYLEGALITY
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

namespace pd = pccx::dialect;

struct VerifyLegalityPass
    : pccx::impl::VerifyLegalityBase<VerifyLegalityPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([&](Operation *op) {
      if (!pd::opcodeOf(op))
        return WalkResult::advance();
      for (const char *pending :
           {"weight_shape", "fmap_shape", "shape_patches", "src_addr_offset",
            "dst_addr_offset", "dest_reg_offset", "dest_addr_offset"})
        if (op->hasAttr(pending)) {
          op->emitOpError() << "still carries '" << pending
                            << "'; run pccx-allocate-constants and "
                               "pccx-allocate-l2 first";
          return WalkResult::interrupt();
        }
      FailureOr<pccx::isa::Instruction> inst = pd::toInstruction(op);
      if (failed(inst))
        return WalkResult::interrupt();
      std::string error = pccx::isa::checkInstruction(*inst);
      if (!error.empty()) {
        op->emitOpError() << "does not encode: " << error;
        return WalkResult::interrupt();
      }
      uint64_t word = 0;
      std::string encodeError;
      if (!pccx::isa::encode(*inst, word, &encodeError)) {
        op->emitOpError() << "does not encode: " << encodeError;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
