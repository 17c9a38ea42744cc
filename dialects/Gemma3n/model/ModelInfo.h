//===- ModelInfo.h - what a gemma3n module records about its model -*- C++ -*-===//
//
// The attributes the importer puts on a gemma3n module (the text config, the
// checkpoint it came from, KV-sharing state) and their readers, shared by the
// importer, the passes and the emitter.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_DIALECTS_GEMMA3N_MODEL_MODELINFO_H
#define PCCX_DIALECTS_GEMMA3N_MODEL_MODELINFO_H

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Gemma3n/JsonAttr.h"
#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/MatFormer.h"
#include "runtime/import/Safetensors.h"

#include <nlohmann/json.hpp>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>

namespace pccx {

/// Module attribute names.
constexpr const char kConfigAttr[] = "gemma3n.config";
constexpr const char kCheckpointAttr[] = "gemma3n.checkpoint";
constexpr const char kPrefixAttr[] = "gemma3n.prefix";
/// #gemma3n.kv_sharing_resolved once the kv-sharing pass has applied the
/// config's sharing; absent after import (every layer caches its own K/V).
constexpr const char kKvSharingAttr[] = "gemma3n.kv_sharing";
/// Function attribute: "decode" or "prefill".
constexpr const char kFunctionKindAttr[] = "gemma3n.kind";
/// Argument attributes of KV-cache arguments: "k" / "v", and the layer.
constexpr const char kCacheKindAttr[] = "gemma3n.cache";
constexpr const char kCacheLayerAttr[] = "gemma3n.layer";
/// Op attribute: the decoder layer an op belongs to, set by the importer
/// (passes that replace layer ops carry it over). Ops without it are
/// model-level (embedding, final norm, LM head).
constexpr const char kLayerAttr[] = "gemma3n.layer";

/// The layer of `op` (kLayerAttr), or -1 for a model-level op.
inline int64_t layerOf(mlir::Operation *op) {
  auto layer = op->getAttrOfType<mlir::IntegerAttr>(kLayerAttr);
  return layer ? layer.getInt() : -1;
}


/// An opened and validated checkpoint directory.
struct LoadedCheckpoint {
  std::string dir;
  import::Gemma3nTextConfig config;
  std::unique_ptr<import::Checkpoint> checkpoint;
  std::string prefix; ///< Text-decoder tensor prefix ("model.", ...).
};

/// Reads DIR/config.json and the safetensors in DIR and checks that every
/// tensor the config needs is present with the right shape; cut to the
/// MatFormer slice `matformerSlice` names when it is not empty
/// (runtime/import/MatFormer.h).
bool loadCheckpoint(const std::string &dir, LoadedCheckpoint *out,
                    std::string *error,
                    const std::string &matformerSlice = "");

/// The config as a module attribute (#gemma3n.config).
mlir::Attribute configToAttr(mlir::Builder &builder,
                             const import::Gemma3nTextConfig &config);

/// The text config recorded in `module` (kConfigAttr).
bool moduleConfig(mlir::ModuleOp module, import::Gemma3nTextConfig *config,
                  std::string *error);

/// Opens the checkpoint a module was imported from (kCheckpointAttr,
/// kPrefixAttr) and checks it still matches the recorded config.
bool loadModuleCheckpoint(mlir::ModuleOp module, LoadedCheckpoint *out,
                          std::string *error);

} // namespace pccx

#endif
