//===- HostParamsJson.cpp - host-kernel parameters as JSON ----------------===//

#include "compiler/emit/HostParamsJson.h"

#include "dialects/Pccx/PccxOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using nlohmann::json;

namespace pccx {

json hostParamsToJson(Attribute attr) {
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json out = json::object();
    for (NamedAttribute entry : d)
      out[entry.getName().str()] = hostParamsToJson(entry.getValue());
    return out;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json out = json::array();
    for (Attribute item : a)
      out.push_back(hostParamsToJson(item));
    return out;
  }
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  // BoolAttr is an i1 IntegerAttr: ask for it first.
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (llvm::isa<UnitAttr>(attr))
    return true;
  if (auto s = dyn_cast<FlatSymbolRefAttr>(attr))
    return s.getValue().str();
  // A placed host region: [word offset, elems, rows, stride] (the form of
  // hw/abi/HostKernels.def). Symbolic ones have no JSON form.
  if (auto r = dyn_cast<dialect::HostRegionAttr>(attr))
    return r.getBuffer() ? json(nullptr)
                         : json::array({r.getOffset(), r.getElems(),
                                        r.getRows(), r.getStride()});
  return nullptr;
}

} // namespace pccx
