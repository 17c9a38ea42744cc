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

/// Whether `name` is encoded in the instruction word (a field or a flag of
/// hw/isa/PccxIsa.def) or travels with it into the bundle (the run-time
/// `patches`, the `weights` record of the weight plan).
bool isWordAttribute(Operation *op, StringAttr name) {
  if (name.getValue() == "patches" || name.getValue() == "weights")
    return true;
  pccx::isa::Format format = pccx::isa::opcodeInfo(*pd::opcodeOf(op)).format;
  for (pccx::isa::Field f : pccx::isa::fieldsOf(format)) {
    const pccx::isa::FieldInfo &info = pccx::isa::fieldInfo(f);
    if (name.getValue() == info.name)
      return true;
    if (info.kind == pccx::isa::FieldKind::Flags)
      for (unsigned bit = 0; bit < info.width(); ++bit)
        if (const char *flag = pccx::isa::flagName(f, 1u << bit))
          if (name.getValue() == flag)
            return true;
  }
  return false;
}

struct VerifyLegalityPass : pccx::impl::VerifyLegalityBase<VerifyLegalityPass> {
  void runOnOperation() override {
    const pccx::machine::Target target = pd::targetOf(getOperation());
    WalkResult result = getOperation().walk([&](Operation *op) {
      if (!pd::opcodeOf(op))
        return WalkResult::advance();
      // Every attribute an instruction op declares besides what the word
      // and the bundle carry is a statement for the machine passes
      // (PccxOps.td, "Before encoding"): none may remain.
      for (StringAttr declared : op->getName().getAttributeNames()) {
        if (!op->getAttr(declared) || isWordAttribute(op, declared))
          continue;
        op->emitOpError() << "still carries '" << declared.getValue()
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
      // Hand-written programs (pccx-as, conformance vectors) may still
      // carry such words for bring-up; a compiled module may not.
      std::string missing = pccx::machine::refusedByCompiler(*inst, target);
      if (!missing.empty()) {
        // What to do: the default target, which the CPU path runs.
        op->emitOpError() << "cannot run on target "
                          << pccx::machine::targetProfile(target).name
                          << ": " << missing << "; compile for target "
                          << pccx::machine::targetProfile(
                                 pccx::machine::kDefaultTarget)
                                 .name
                          << " (the default), which the CPU path runs "
                             "(docs/isa-semantics.md §13)";
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
            kernel.emitOpError()
                << "uses the unplaced host buffer " << r.getBuffer()
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
