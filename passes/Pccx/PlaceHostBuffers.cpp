//===- PlaceHostBuffers.cpp - host-window addresses for host buffers ------===//
//
// The conversion states each pccx.host.buffer's lifetime as two ordinals of
// its program's allocation events; replaying the events in order, first
// fit over the host window, gives every buffer its words. Then symbolic
// host addresses (MEMCPY aux_addr, #pccx.region in host-kernel parameters)
// become window words, and the program records its high-water mark.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/FirstFitAllocator.h"

#include "hw/machine/MachineModel.h"

#include "mlir/IR/Builders.h"

#include <map>

using namespace mlir;

namespace pccx {
#define GEN_PASS_DEF_PLACEHOSTBUFFERS
#include "passes/Passes.h.inc"
} // namespace pccx

namespace {

namespace pd = pccx::dialect;

struct PlaceHostBuffersPass
    : pccx::impl::PlaceHostBuffersBase<PlaceHostBuffersPass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<pd::ProgramOp>())
      if (failed(place(program)))
        return signalPassFailure();
  }

  LogicalResult place(pd::ProgramOp program) {
    struct Event {
      int64_t ordinal;
      bool free;
      pd::HostBufferOp buffer;
    };
    std::vector<Event> events;
    std::map<std::string, pd::HostBufferOp> buffers;
    for (auto buffer : program.getBody().getOps<pd::HostBufferOp>()) {
      buffers[buffer.getSymName().str()] = buffer;
      // The verifier made both ordinals non-negative.
      events.push_back({buffer.getAllocAttr().getInt(), false, buffer});
      events.push_back({buffer.getFreeAttr().getInt(), true, buffer});
    }
    std::stable_sort(
        events.begin(), events.end(),
        [](const Event &a, const Event &b) { return a.ordinal < b.ordinal; });
    for (size_t i = 1; i < events.size(); ++i)
      if (events[i].ordinal == events[i - 1].ordinal)
        return events[i].buffer.emitOpError()
               << "shares allocation event " << events[i].ordinal << " with @"
               << events[i - 1].buffer.getSymName()
               << "; every event must have its own ordinal";

    // The host window of the module's target.
    const int64_t windowWords =
        pccx::machine::targetProfile(pd::targetOf(program)).hostWindowWords;
    pccx::FirstFitAllocator window{windowWords};
    std::map<std::string, int64_t> address, live;
    Builder b(program.getContext());
    for (Event &e : events) {
      const std::string name = e.buffer.getSymName().str();
      const int64_t words = int64_t(e.buffer.getWords());
      if (e.free) {
        window.release(address[name], words);
        live.erase(name);
        continue;
      }
      int64_t at = window.allocate(words);
      if (at < 0) {
        int64_t liveWords = 0;
        for (auto &[other, w] : live)
          liveWords += w;
        return e.buffer.emitOpError()
               << "needs " << words << " host-window words while "
               << live.size() << " live buffers hold " << liveWords
               << " of the " << windowWords
               << " words; the program does not fit the host window (lower "
                  "the prefill rows)";
      }
      address[name] = at;
      live[name] = words;
      e.buffer.setAddressAttr(b.getI64IntegerAttr(at));
    }

    auto placed = [&](Attribute a) -> Attribute {
      auto r = dyn_cast<pd::HostRegionAttr>(a);
      if (!r || !r.getBuffer())
        return a;
      return pd::HostRegionAttr::get(a.getContext(), FlatSymbolRefAttr(),
                                     address[r.getBuffer().getValue().str()] +
                                         r.getOffset(),
                                     r.getElems(), r.getRows(), r.getStride());
    };
    WalkResult result = program.walk([&](Operation *op) {
      if (auto copy = dyn_cast<pd::MemcpyOp>(op)) {
        auto offset = op->getAttrOfType<IntegerAttr>("aux_addr_offset");
        if (auto sym = dyn_cast<FlatSymbolRefAttr>(copy.getAuxAddr())) {
          auto it = address.find(sym.getValue().str());
          if (it == address.end()) {
            op->emitOpError()
                << "names " << sym << ", which the program does not declare";
            return WalkResult::interrupt();
          }
          op->setAttr(
              "aux_addr",
              b.getI64IntegerAttr(it->second + (offset ? offset.getInt() : 0)));
        }
        op->removeAttr("aux_addr_offset");
      }
      if (auto kernel = dyn_cast<pd::HostKernelOp>(op)) {
        DictionaryAttr old = kernel.getParamsAttr();
        if (!old)
          return WalkResult::advance();
        SmallVector<NamedAttribute> params;
        for (NamedAttribute p : old) {
          Attribute v = p.getValue();
          if (auto list = dyn_cast<ArrayAttr>(v)) {
            SmallVector<Attribute> items;
            for (Attribute item : list)
              items.push_back(placed(item));
            v = b.getArrayAttr(items);
          } else {
            v = placed(v);
          }
          params.push_back(b.getNamedAttr(p.getName(), v));
        }
        kernel.setParamsAttr(b.getDictionaryAttr(params));
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    program->setAttr("window_words", b.getI64IntegerAttr(window.highWater()));
    return success();
  }
};

} // namespace
