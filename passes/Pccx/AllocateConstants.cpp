//===- AllocateConstants.cpp - constant-cache entries and MEMSETs ---------===//
//
// Each bank (fmap_shape, weight_shape) has 64 entries. In program order an
// instruction's shape is looked up among the resident entries; a miss
// evicts the least recently used entry and inserts the MEMSET that loads
// it. Entries loaded by one layer are therefore reused by the next, which
// has the same shapes. Patched shapes (run-time values) always get their
// own MEMSET with the patches, and the entry is not reused.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "hw/machine/MachineModel.h"

#include "mlir/IR/Builders.h"

#include <array>
#include <optional>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_ALLOCATECONSTANTS
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

namespace pd = pccx::dialect;

struct Bank {
  struct Entry {
    std::optional<std::array<int64_t, 3>> value; ///< none: free or patched
    uint64_t lastUse = 0;
  };
  /// A bank of the target's size (TargetProfile::constCacheEntries).
  explicit Bank(size_t size) : entries(size) {}
  std::vector<Entry> entries;

  /// The entry holding `value`, or the one to overwrite (free first, then
  /// least recently used); `hit` tells which.
  int64_t lookup(const std::optional<std::array<int64_t, 3>> &value,
                 bool *hit) {
    if (value)
      for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].value == value) {
          *hit = true;
          return int64_t(i);
        }
    *hit = false;
    int64_t victim = 0;
    for (size_t i = 0; i < entries.size(); ++i)
      if (entries[i].lastUse < entries[size_t(victim)].lastUse)
        victim = int64_t(i);
    return victim;
  }
};

struct AllocateConstantsPass
    : pccx::impl::AllocateConstantsBase<AllocateConstantsPass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<pd::ProgramOp>())
      if (failed(allocate(program)))
        return signalPassFailure();
  }

  LogicalResult allocate(pd::ProgramOp program) {
    // Banks of the module's target.
    const size_t bankEntries =
        pccx::machine::targetProfile(pd::targetOf(program)).constCacheEntries;
    Bank fmap(bankEntries), weight(bankEntries);
    uint64_t clock = 0;
    OpBuilder b(program.getContext());
    for (auto segment : program.getBody().getOps<pd::SegmentOp>()) {
      for (Operation &op :
           llvm::make_early_inc_range(segment.getBody().front())) {
        struct Use {
          const char *shapeAttr, *bankName, *pointer;
          Bank *bank;
        };
        SmallVector<Use> uses;
        if (isa<pd::GemvOp, pd::GemmOp>(op)) {
          uses.push_back(
              {"weight_shape", "weight_shape", "shape_ptr_addr", &weight});
          uses.push_back({"fmap_shape", "fmap_shape", "size_ptr_addr", &fmap});
        } else if (isa<pd::MemcpyOp>(op)) {
          uses.push_back({"fmap_shape", "fmap_shape", "shape_ptr_addr", &fmap});
        }
        auto patches = op.getAttrOfType<ArrayAttr>("shape_patches");
        for (const Use &use : uses) {
          auto shape = op.getAttrOfType<pd::ShapeAttr>(use.shapeAttr);
          if (!shape)
            continue; // already assigned (hand-written programs)
          const std::array<int64_t, 3> value = {shape.getA(), shape.getB(),
                                                shape.getC()};
          // The shape's patches move to its MEMSET, without their bank.
          SmallVector<Attribute> mine;
          if (patches)
            for (Attribute a : patches) {
              auto p = cast<pd::PatchAttr>(a);
              if (p.getBank() == use.bankName)
                mine.push_back(pd::PatchAttr::get(
                    p.getContext(), p.getField(), p.getSource(), p.getScale(),
                    p.getOffset(), p.getDelta(), p.getWindow(), ""));
            }
          std::optional<std::array<int64_t, 3>> key;
          if (mine.empty())
            key = value;
          bool hit = false;
          int64_t entry = use.bank->lookup(key, &hit);
          use.bank->entries[size_t(entry)].lastUse = ++clock;
          if (!hit) {
            use.bank->entries[size_t(entry)].value = key;
            b.setInsertionPoint(&op);
            b.create<pd::MemsetOp>(
                op.getLoc(), b.getStringAttr(use.bankName),
                b.getI64IntegerAttr(entry), b.getI64IntegerAttr(value[0]),
                b.getI64IntegerAttr(value[1]), b.getI64IntegerAttr(value[2]),
                mine.empty() ? ArrayAttr() : b.getArrayAttr(mine));
          }
          op.setAttr(use.pointer, b.getI64IntegerAttr(entry));
          op.removeAttr(use.shapeAttr);
        }
        op.removeAttr("shape_patches");
      }
    }
    return success();
  }
};

} // namespace
