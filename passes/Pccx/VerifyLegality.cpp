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
            "dst_addr_offset", "dest_reg_offset", "dest_addr_offset",
            "aux_addr_offset"})
        if (op->hasAttr(pending)) {
          op->emitOpError() << "still carries '" << pending
                            << "'; run pccx-allocate-constants, "
                               "pccx-place-host-buffers and pccx-allocate-l2 "
                               "first";
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
      return signalPassFailure();
    // Host kernels read and write placed window words only.
    result = getOperation().walk([&](pd::HostKernelOp kernel) {
      for (bool outputs : {false, true})
        for (pd::HostRegionAttr r : kernel.getRegions(outputs))
          if (r.getBuffer()) {
            kernel.emitOpError() << "uses the unplaced host buffer "
                                 << r.getBuffer()
                                 << "; run pccx-place-host-buffers first";
            return WalkResult::interrupt();
          }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // The runtime waits only where a pccx.host.sync stands (and at segment
    // ends): a host kernel may run only when no instruction issued since
    // the last wait can still be in flight, so it cannot read NPU output
    // that has not arrived nor overwrite window words a MEMCPY still reads.
    getOperation().walk([&](pd::SegmentOp segment) {
      Operation *unsynced = nullptr;
      for (Operation &op : segment.getBody().front()) {
        if (pd::opcodeOf(&op))
          unsynced = &op;
        else if (isa<pd::HostSyncOp>(op))
          unsynced = nullptr;
        else if (isa<pd::HostKernelOp>(op) && unsynced) {
          InFlightDiagnostic d = op.emitOpError()
                                 << "runs after an instruction with no "
                                    "pccx.host.sync in between; run "
                                    "pccx-schedule-async";
          d.attachNote(unsynced->getLoc()) << "the instruction";
          signalPassFailure();
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
  }
};

} // namespace
