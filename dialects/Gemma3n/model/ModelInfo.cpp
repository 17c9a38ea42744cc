//===- ModelInfo.cpp - what a gemma3n module records about its model ------===//

#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace pccx {

bool loadCheckpoint(const std::string &dir, LoadedCheckpoint *out,
                    std::string *error) {
  out->dir = dir;
  if (!import::loadGemma3nConfig(dir + "/config.json", &out->config, error))
    return false;
  out->checkpoint = import::Checkpoint::open(dir, error);
  if (!out->checkpoint)
    return false;
  if (!import::detectTextPrefix(*out->checkpoint, &out->prefix, error))
    return false;
  return import::validateCheckpoint(out->config, *out->checkpoint, error);
}

// The config travels in the module as an attribute mirroring its JSON
// (objects as dictionaries, null as a unit attribute), readable in the IR
// and converted back to JSON for the one config parser.
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

namespace {

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
    *error = std::string(kConfigAttr) + ": unexpected attribute " + text;
    return false;
  }
  return true;
}

} // namespace

bool moduleConfig(ModuleOp module, import::Gemma3nTextConfig *config,
                  std::string *error) {
  auto dict = module->getAttrOfType<DictionaryAttr>(kConfigAttr);
  if (!dict) {
    *error = std::string("module has no '") + kConfigAttr +
             "' dictionary attribute (import a checkpoint with pccx-compile "
             "--emit=gemma3n)";
    return false;
  }
  nlohmann::json j;
  if (!attrToJson(dict, j, error))
    return false;
  return import::parseGemma3nConfig(j.dump(), config, error, kConfigAttr);
}

Attribute configToAttr(Builder &builder,
                       const import::Gemma3nTextConfig &config) {
  return jsonToAttr(builder, config.toJsonValue());
}

bool loadModuleCheckpoint(ModuleOp module, LoadedCheckpoint *out,
                          std::string *error) {
  auto dir = module->getAttrOfType<StringAttr>(kCheckpointAttr);
  auto prefix = module->getAttrOfType<StringAttr>(kPrefixAttr);
  if (!dir || !prefix) {
    *error = std::string("module has no '") + kCheckpointAttr + "' and '" +
             kPrefixAttr + "' attributes naming its checkpoint";
    return false;
  }
  import::Gemma3nTextConfig recorded;
  if (!moduleConfig(module, &recorded, error) ||
      !loadCheckpoint(dir.str(), out, error))
    return false;
  if (recorded.toJson() != out->config.toJson()) {
    *error = dir.str() + "/config.json no longer matches the config recorded "
                         "in the module";
    return false;
  }
  out->prefix = prefix.str();
  return true;
}

} // namespace pccx
