//===- ModelImporter.h - checkpoint to gemma3n IR ---------------*- C++ -*-===//
//
// Builds the gemma3n module of a Hugging Face Gemma 3n checkpoint: a
// `decode_step` function (one token) and a `prefill` function (any number of
// tokens), each returning logits and the updated KV caches. Weights appear as
// `gemma3n.weight` ops naming checkpoint tensors (their data stays in the
// mapped files); every op's location names the checkpoint tensor or module
// it comes from.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_COMPILER_MODELIMPORTER_H
#define PCCX_COMPILER_MODELIMPORTER_H

#include "compiler/import/Gemma3nConfig.h"
#include "compiler/import/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>

namespace pccx {

/// An opened and validated checkpoint directory.
struct LoadedCheckpoint {
  std::string dir;
  import::Gemma3nTextConfig config;
  std::unique_ptr<import::Checkpoint> checkpoint;
  std::string prefix; ///< Text-decoder tensor prefix ("model.", ...).
};

/// Reads DIR/config.json and the safetensors in DIR and checks that every
/// tensor the config needs is present with the right shape.
bool loadCheckpoint(const std::string &dir, LoadedCheckpoint *out,
                    std::string *error);

struct ImportOptions {
  /// KV-cache slots per layer (positions beyond it wrap as a ring).
  int64_t maxSeqLen = 1024;
};

/// Module attribute names.
constexpr const char kConfigAttr[] = "gemma3n.config";
constexpr const char kCheckpointAttr[] = "gemma3n.checkpoint";
constexpr const char kPrefixAttr[] = "gemma3n.prefix";
constexpr const char kMaxSeqLenAttr[] = "gemma3n.max_seq_len";
/// "unresolved" after import (every layer caches its own K/V), "resolved"
/// once the kv-sharing pass has applied the config's sharing.
constexpr const char kKvSharingAttr[] = "gemma3n.kv_sharing";
/// Function attribute: "decode" or "prefill".
constexpr const char kFunctionKindAttr[] = "gemma3n.kind";
/// Argument attributes of KV-cache arguments: "k" / "v", and the layer.
constexpr const char kCacheKindAttr[] = "gemma3n.cache";
constexpr const char kCacheLayerAttr[] = "gemma3n.layer";

mlir::OwningOpRef<mlir::ModuleOp>
importModel(mlir::MLIRContext &context, const LoadedCheckpoint &checkpoint,
            const ImportOptions &options, std::string *error);

/// The text config recorded in a module by importModel().
bool moduleConfig(mlir::ModuleOp module, import::Gemma3nTextConfig *config,
                  std::string *error);

} // namespace pccx

#endif
