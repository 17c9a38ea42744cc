//===- AllocateL2.cpp - L2 word addresses with liveness-based reuse -------===//

#include "passes/Passes.h"

#include "passes/FirstFitAllocator.h"

#include "hw/machine/MachineModel.h"

#include "mlir/IR/Builders.h"

#include <map>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_ALLOCATEL2
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

namespace pd = pccx::dialect;

/// Fields that hold L2 word addresses.
constexpr const char *kAddressFields[] = {"dest_reg", "src_addr", "dest_addr",
                                          "dst_addr"};

struct AllocateL2Pass : pccx::impl::AllocateL2Base<AllocateL2Pass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<pd::ProgramOp>())
      if (failed(allocate(program)))
        return signalPassFailure();
  }

  LogicalResult allocate(pd::ProgramOp program) {
    // Lifetimes in instruction order.
    std::map<std::string, std::pair<int64_t, int64_t>> live;
    std::map<std::string, pd::BufferOp> buffers;
    for (auto buffer : program.getBody().getOps<pd::BufferOp>())
      buffers[buffer.getSymName().str()] = buffer;
    SmallVector<Operation *> instructions;
    int64_t index = 0;
    for (auto segment : program.getBody().getOps<pd::SegmentOp>())
      for (Operation &op : segment.getBody().front()) {
        if (!pd::opcodeOf(&op))
          continue;
        instructions.push_back(&op);
        for (const char *field : kAddressFields)
          if (auto sym = op.getAttrOfType<FlatSymbolRefAttr>(field)) {
            std::string name = sym.getValue().str();
            if (!buffers.count(name))
              return op.emitOpError() << "names " << sym
                                      << ", which the program does not "
                                         "declare";
            auto [it, inserted] = live.try_emplace(name, index, index);
            it->second.second = index;
          }
        ++index;
      }

    // Buffers by first use; first fit over the words that exist.
    std::vector<std::string> order;
    for (auto &[name, span] : live)
      order.push_back(name);
    std::stable_sort(order.begin(), order.end(),
                     [&](const std::string &a, const std::string &b) {
                       return live[a].first < live[b].first;
                     });
    // The L2 of the module's target.
    const int64_t l2Words =
        pccx::machine::targetProfile(pd::targetOf(program)).l2Words;
    pccx::FirstFitAllocator l2{l2Words};
    std::multimap<int64_t, std::string> active; // last use -> buffer
    std::map<std::string, int64_t> address;
    for (const std::string &name : order) {
      int64_t first = live[name].first;
      while (!active.empty() && active.begin()->first < first) {
        const std::string &dead = active.begin()->second;
        l2.release(address[dead], int64_t(buffers[dead].getWords()));
        active.erase(active.begin());
      }
      int64_t words = int64_t(buffers[name].getWords());
      int64_t at = l2.allocate(words);
      if (at < 0) {
        int64_t liveWords = 0;
        for (auto &[end, other] : active)
          liveWords += int64_t(buffers[other].getWords());
        return buffers[name].emitOpError()
               << "needs " << words << " L2 words while " << active.size()
               << " live buffers hold " << liveWords << " of the "
               << l2Words << " words; the program does not fit the L2 (lower "
                  "--max-seq-len or the prefill rows)";
      }
      address[name] = at;
      active.emplace(live[name].second, name);
    }

    Builder b(program.getContext());
    for (auto &[name, buffer] : buffers) {
      auto it = address.find(name);
      if (it == address.end()) {
        buffer.erase(); // never used
        continue;
      }
      buffer.setAddressAttr(b.getI64IntegerAttr(it->second));
    }
    for (Operation *op : instructions)
      for (const char *field : kAddressFields) {
        std::string offsetName = std::string(field) + "_offset";
        auto offset = op->getAttrOfType<IntegerAttr>(offsetName);
        if (auto sym = op->getAttrOfType<FlatSymbolRefAttr>(field)) {
          int64_t at = address[sym.getValue().str()] +
                       (offset ? offset.getInt() : 0);
          op->setAttr(field, b.getI64IntegerAttr(at));
        }
        op->removeAttr(offsetName);
      }
    return success();
  }
};

} // namespace
