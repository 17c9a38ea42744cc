//===- AttrJson.cpp - attributes as manifest JSON -------------------------===//

#include "compiler/emit/AttrJson.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using nlohmann::json;

namespace pccx {

json attrToJson(Attribute attr) {
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json out = json::object();
    for (NamedAttribute entry : d)
      out[entry.getName().str()] = attrToJson(entry.getValue());
    return out;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json out = json::array();
    for (Attribute item : a)
      out.push_back(attrToJson(item));
    return out;
  }
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (llvm::isa<UnitAttr>(attr))
    return true;
  if (auto s = dyn_cast<FlatSymbolRefAttr>(attr))
    return s.getValue().str();
  return nullptr;
}

} // namespace pccx
