//===- ModelInfo.cpp - what a gemma3n module records about its model ------===//

#include "dialects/Gemma3n/model/ModelInfo.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace pccx {

bool loadCheckpoint(const std::string &dir, LoadedCheckpoint *out,
                    std::string *error, const std::string &matformerSlice) {
  out->dir = dir;
  return import::openCheckpoint(dir, matformerSlice, &out->config,
                                &out->checkpoint, error) &&
         import::detectTextPrefix(*out->checkpoint, &out->prefix, error);
}

bool moduleConfig(ModuleOp module, import::Gemma3nTextConfig *config,
                  std::string *error) {
  auto attr = module->getAttrOfType<gemma3n::ConfigAttr>(kConfigAttr);
  if (!attr) {
    *error = std::string("module has no '") + kConfigAttr +
             "' #gemma3n.config attribute (import a checkpoint with "
             "pccx-compile --emit=gemma3n)";
    return false;
  }
  *config = attr.getConfig();
  return true;
}

Attribute configToAttr(Builder &builder,
                       const import::Gemma3nTextConfig &config) {
  return gemma3n::ConfigAttr::get(builder.getContext(), config);
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
  if (!moduleConfig(module, &recorded, error))
    return false;
  // A module cut from the checkpoint (--matformer-slice) cuts it again.
  out->dir = dir.str();
  if (!import::reopenCheckpoint(out->dir, recorded, &out->config,
                                &out->checkpoint, error) ||
      !import::detectTextPrefix(*out->checkpoint, &out->prefix, error))
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
