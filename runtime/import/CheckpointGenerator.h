//===- CheckpointGenerator.h - synthetic Gemma 3n checkpoints ---*- C++ -*-===//
//
// Writes Hugging Face-layout Gemma 3n text checkpoints (config.json plus
// bf16 safetensors, sharded with model.safetensors.index.json when large)
// filled with deterministic pseudo-random weights whose magnitudes keep the
// activations of every layer near unit scale, as a trained model's are. Used
// for the end-to-end tests, the demo and the full-size benchmarks.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_CHECKPOINTGENERATOR_H
#define PCCX_RUNTIME_IMPORT_CHECKPOINTGENERATOR_H

#include "runtime/import/Gemma3nConfig.h"
#include "runtime/import/Safetensors.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pccx::import {

/// Names accepted by presetConfig().
std::vector<std::string> checkpointPresets();

/// The config of a named preset: "tiny" (seconds to compile and run, yet
/// every mechanism present: full and sliding layers with a window of 8,
/// KV-shared layers of both types, sparse and dense FFN layers, token ids
/// beyond the per-layer vocabulary), "e2b" and "e4b" (the released sizes).
bool presetConfig(const std::string &name, Gemma3nTextConfig *config,
                  std::string *error);

struct GeneratorOptions {
  uint64_t seed = 0;
  /// Tensor name prefix. "model." is what transformers' Gemma3nForCausalLM
  /// loads with the bare text config.json written here; the multimodal
  /// release uses "model.language_model.".
  std::string prefix = "model.";
  /// Shards are filled up to this many bytes of tensor data (a tensor is
  /// never split); one file, model.safetensors, when everything fits.
  uint64_t maxShardBytes = uint64_t(4) << 30;
  /// Replace a directory that already holds files (CheckpointWriteOptions).
  bool overwrite = false;
  /// Called after each tensor with bytes written so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

/// A tensor to write: its header entry, its size in bytes, and the function
/// that hands its data to the writer (SafetensorsWriter::writeBytes or
/// writeFloats, in one or more chunks).
struct OutputTensor {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  std::function<bool(SafetensorsWriter &, std::string *)> write;
};
/// A file beside the weights (config.json, the tokenizer, ...): `content`,
/// or, when `copyFrom` is set, the bytes of that regular file (copied in
/// chunks, never read whole).
struct OutputFileText {
  std::string name;
  std::string content;
  std::string copyFrom;
};
struct CheckpointWriteOptions {
  uint64_t maxShardBytes = uint64_t(4) << 30;
  /// Replace a directory that already holds files (a checkpoint or
  /// anything else) whole; otherwise only a missing or empty one is written.
  bool overwrite = false;
  std::function<void(uint64_t done, uint64_t total)> progress;
};

/// Refuses an output `dir` that exists and is not a directory, or holds
/// anything without `overwrite` (naming a checkpoint's files when it holds
/// one, and the option that replaces it, `overwriteFlag`, unless null), or holds a
/// directory (overwriting replaces a directory of files, never a tree).
bool checkCheckpointOutput(const std::string &dir, bool overwrite,
                           std::string *error,
                           const char *overwriteFlag = "--overwrite");

/// Writes a checkpoint directory `dir`: `tensors` sorted by name into
/// shards of at most options.maxShardBytes (model.safetensors when one
/// holds them all, with model.safetensors.index.json otherwise), then
/// `files`. The directory is written beside `dir` under a temp name
/// (hw/support/OutputFile.h, OutputDirectory; missing parents are created)
/// and renamed into place once complete, so an interrupted or failed run
/// leaves nothing, and a replaced directory (checkCheckpointOutput) leaves
/// no file behind. An existing `dir` is locked while written: a second
/// writer of it is refused.
bool writeCheckpoint(const std::string &dir,
                     const std::vector<OutputTensor> &tensors,
                     const std::vector<OutputFileText> &files,
                     const CheckpointWriteOptions &options,
                     std::string *error);

/// Writes config.json and the weights for `config` into `dir`, as
/// writeCheckpoint does (options.overwrite to replace a directory that
/// holds files).
bool generateCheckpoint(const Gemma3nTextConfig &config,
                        const std::string &dir,
                        const GeneratorOptions &options, std::string *error);

} // namespace pccx::import

#endif
