//===- JsonAttr.cpp - JSON values as attributes and back ------------------===//

#include "dialects/Gemma3n/JsonAttr.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace pccx {

Attribute jsonToAttr(Builder &b, const nlohmann::json &j) {
  switch (j.type()) {
  case nlohmann::json::value_t::object: {
    SmallVector<NamedAttribute> entries;
    for (auto it = j.begin(); it != j.end(); ++it)
      entries.push_back(b.getNamedAttr(it.key(), jsonToAttr(b, it.value())));
    return b.getDictionaryAttr(entries);
  }
  case nlohmann::json::value_t::array: {
    SmallVector<Attribute> items;
    for (const auto &item : j)
      items.push_back(jsonToAttr(b, item));
    return b.getArrayAttr(items);
  }
  case nlohmann::json::value_t::string:
    return b.getStringAttr(j.get<std::string>());
  case nlohmann::json::value_t::boolean:
    return b.getBoolAttr(j.get<bool>());
  case nlohmann::json::value_t::number_integer:
  case nlohmann::json::value_t::number_unsigned:
    return b.getI64IntegerAttr(j.get<int64_t>());
  case nlohmann::json::value_t::number_float:
    return b.getF64FloatAttr(j.get<double>());
  default:
    return b.getUnitAttr();
  }
}

bool attrToJson(Attribute attr, nlohmann::json &out, std::string *error) {
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    out = nlohmann::json::object();
    for (NamedAttribute entry : d)
      if (!attrToJson(entry.getValue(), out[entry.getName().str()], error))
        return false;
  } else if (auto a = dyn_cast<ArrayAttr>(attr)) {
    out = nlohmann::json::array();
    for (Attribute item : a) {
      out.push_back(nullptr);
      if (!attrToJson(item, out.back(), error))
        return false;
    }
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    out = s.str();
  } else if (auto bl = dyn_cast<BoolAttr>(attr)) {
    out = bl.getValue();
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    out = i.getInt();
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    out = f.getValueAsDouble();
  } else if (isa<UnitAttr>(attr)) {
    out = nullptr;
  } else {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << attr;
    *error = "unexpected attribute " + text + " (not a JSON value)";
    return false;
  }
  return true;
}

} // namespace pccx
