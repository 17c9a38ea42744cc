//===- MatFormer.h - nested Gemma 3n models cut from a checkpoint -*- C++ -*-===//
//
// Gemma 3n is a MatFormer: a smaller model is the E4B checkpoint with some
// layers dropped and each kept layer's FFN cut to a prefix of its width
// (the "MatFormer Lab" recipe; docs/matformer.md). A slice is applied when a
// checkpoint is opened: the config is rewritten and the checkpoint's tensor
// table replaced by views of the stored tensors (renamed layers, row and
// column ranges), so nothing is copied and every reader (importer, float
// reference, calibration, the sliced-checkpoint writer) sees the same
// smaller model.
//
// Plain C++17 without LLVM; errors are returned as values.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_MATFORMER_H
#define PCCX_RUNTIME_IMPORT_MATFORMER_H

#include "runtime/import/CheckpointGenerator.h"
#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pccx::import {

/// One of the configurations Google published for E4B
/// (google/gemma3n-slicing-configs).
struct PublishedSlice {
  const char *name;      ///< as published, e.g. "Config for E2.54B (layer-level)"
  const char *shortName; ///< e.g. "E2.54B-layer"
  int layers;            ///< kept layers
  double effectiveParams; ///< billions, as published
  double mmlu;           ///< pre-trained MMLU accuracy, percent
  const char *skipped;   ///< E4B layers dropped, comma separated
  /// One digit per kept layer: its FFN width in eighths of the checkpoint's
  /// (E4B: units of 2048 of 16384; "4" is 8192, "8" all of it).
  const char *ffnEighths;
};

/// The 16 published configurations, full model first.
const std::vector<PublishedSlice> &publishedSlices();

/// A slice of a particular checkpoint: the layers to drop and the width of
/// each kept layer (the Lab's `layers_to_skip` and `ffn_hidden_dims`).
struct MatFormerSlice {
  std::string name;
  std::vector<int64_t> layersToSkip;
  std::vector<int64_t> ffnHiddenDims;
};

/// `text` as a slice of a checkpoint with config `full`: a published name
/// (either spelling, case-insensitive) or a JSON file
/// {"layers_to_skip": [...], "ffn_hidden_dims": [...]} (widths of the kept
/// layers, in order). A published slice needs an E4B-shaped checkpoint (35
/// layers, the last 15 KV-shared, one FFN width divisible by 8), whose
/// widths it scales. Errors name the rule broken.
bool resolveMatFormerSlice(const std::string &text,
                           const Gemma3nTextConfig &full, MatFormerSlice *out,
                           std::string *error);

/// The config of `slice` of `full`: kept layers renumbered, their widths,
/// layer types and sparsity, num_kv_shared_layers less the skipped shared
/// layers, and the slice recorded (matformer_slice). Refuses a width above
/// the checkpoint's, a skipped KV-sharing source layer, lists of the wrong
/// length, and layers out of range.
bool sliceConfig(const Gemma3nTextConfig &full, const MatFormerSlice &slice,
                 Gemma3nTextConfig *out, std::string *error);

/// Replaces `checkpoint`'s text-decoder tensors (tensor prefix `prefix`)
/// with the views `slice` keeps of them; other tensors stay as they are.
/// `full` is the config the checkpoint was validated against.
bool sliceCheckpoint(Checkpoint &checkpoint, const Gemma3nTextConfig &full,
                     const MatFormerSlice &slice, const std::string &prefix,
                     std::string *error);

/// Reads DIR/config.json and opens the checkpoint in DIR, validated, cut to
/// the slice `sliceText` names (resolveMatFormerSlice) when it is not empty.
bool openCheckpoint(const std::string &dir, const std::string &sliceText,
                    Gemma3nTextConfig *config,
                    std::unique_ptr<Checkpoint> *checkpoint,
                    std::string *error);
/// The same for a model whose config was `recorded` (a module's or a
/// bundle's): when it records a slice and DIR holds the model it was cut
/// from (no slice recorded there), cut DIR the same way.
bool reopenCheckpoint(const std::string &dir,
                      const Gemma3nTextConfig &recorded,
                      Gemma3nTextConfig *config,
                      std::unique_ptr<Checkpoint> *checkpoint,
                      std::string *error);

/// The files beside the weights and config.json that a slice copies from
/// its checkpoint when present (tokenizer, chat template, generation and
/// processor configs, model card, license terms); nothing else is copied.
const std::vector<std::string> &sliceCompanionFiles();

/// Writes the slice `sliceText` of the checkpoint in `fromDir` as a
/// checkpoint of its own in `outDir`, as the MatFormer Lab does: the kept
/// tensors' stored bytes (renamed and cut, nothing converted), the config
/// with the slice recorded (a multimodal config keeps its other parts, with
/// the sliced text_config), and the companion files `fromDir` holds
/// (sliceCompanionFiles), copied in chunks. A companion that is a symlink
/// leading out of the checkpoint is an error (for a Hugging Face cache
/// snapshot, the repository's folder, whose blobs the snapshot's links
/// name, is the checkpoint); one that is not a regular file is left out.
/// `outDir` may not be `fromDir`, lie inside it or hold it (after resolving
/// symlinks); it is written as writeCheckpoint writes. Compiling it gives
/// the bundle that compiling `fromDir` with the slice gives, byte for byte.
bool writeSlicedCheckpoint(const std::string &fromDir,
                           const std::string &sliceText,
                           const std::string &outDir,
                           const CheckpointWriteOptions &options,
                           std::string *error);

/// The slice a config records, as a MatFormerSlice.
MatFormerSlice recordedSlice(const Gemma3nTextConfig &config);

} // namespace pccx::import

#endif
