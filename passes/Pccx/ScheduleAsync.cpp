//===- ScheduleAsync.cpp - async MEMCPY/CVO, syncs before host work -------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_SCHEDULEASYNC
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

namespace pd = pccx::dialect;

struct ScheduleAsyncPass : pccx::impl::ScheduleAsyncBase<ScheduleAsyncPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation().walk([&](pd::SegmentOp segment) {
      bool outstanding = false;
      for (Operation &op :
           llvm::make_early_inc_range(segment.getBody().front())) {
        if (isa<pd::MemcpyOp, pd::CvoOp>(op)) {
          op.setAttr("async", b.getUnitAttr());
          outstanding = true;
        } else if (isa<pd::HostSyncOp>(op)) {
          outstanding = false;
        } else if (isa<pd::HostKernelOp>(op) && outstanding) {
          b.setInsertionPoint(&op);
          b.create<pd::HostSyncOp>(op.getLoc());
          outstanding = false;
        }
      }
    });
  }
};

} // namespace
