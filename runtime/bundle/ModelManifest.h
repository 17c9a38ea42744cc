//===- ModelManifest.h - the typed manifest of a model bundle --*- C++ -*-===//
//
// What pccx-compile records about a compiled model, as C++ types: the
// emitter fills a ModelManifest and writes it with toJson(); every reader
// (the runtime, the reference on a bundle's weights, the effective-weights
// export, the profiler) gets it from readModelManifest(), which validates
// the whole manifest against the bundle once — kinds, signs, sizes with
// overflow-checked arithmetic, every table entry inside its section, every
// word index inside its program — so users of the types can trust them.
// docs/bundle-format.md ("Model manifest") documents the JSON.
//
// The generic keys (annotations, memory map, patch points, segments) are
// shared with hand-assembled bundles (Manifest.h).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_BUNDLE_MODELMANIFEST_H
#define PCCX_RUNTIME_BUNDLE_MODELMANIFEST_H

#include "runtime/bundle/Manifest.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pccx::bundle {

class Bundle;

/// How a stored weight derives from checkpoint tensors (the compiler's
/// weight expression, dialects/Gemma3n/model/WeightEvaluator.h):
///   tensor                              {tensor}
///   tensor * diag(by) * factor          {scale = {tensor}, by = {tensor},
///   factor} quantize(one of the above, scheme)  {quantize = ..., scheme}
struct WeightRecipe {
  std::string tensor;
  std::string scaledBy; ///< empty: no per-column gain folded in
  float factor = 1.0f;
  bool scaled = false; ///< the {scale = ...} form (factor applies)
  std::string scheme;  ///< quantization scheme, empty when not quantized
  nlohmann::json json; ///< the recipe as written
};

/// Parses a recipe; false when it is not one of the forms above.
bool parseWeightRecipe(const nlohmann::json &j, WeightRecipe *out);

/// A record of the weights section: scales then packed rows
/// (hw/numerics/Quantize.h), rows [firstRow, firstRow + rows) of a tensor,
/// and its columns [firstCol, firstCol + cols): all of them, or one group of
/// a scheme with group scales.
struct WeightRecordEntry {
  uint64_t offset = 0, bytes = 0;
  int64_t firstRow = 0, rows = 0, cols = 0;
  WeightRecipe recipe;
  int64_t firstCol = 0;
};

/// The weight-stream bytes of one GEMV/GEMM word.
struct WeightUse {
  uint64_t index = 0;             ///< word index in the program
  bool dynamic = false;           ///< produced by a host kernel at run time
  uint64_t offset = 0, bytes = 0; ///< static: the record's bytes
  /// A record in device memory: the key/value record of kv head `part` of
  /// KV cache `cache`, or (`mask`) the mask of step row `part` over the
  /// slots of key cache `cache` (hw/numerics/KvRecords.h).
  std::string cache;
  int64_t part = 0;
  bool mask = false;
  /// A key/value record of a program with independent rows: the cache of
  /// step row `row`'s sequence (-1: the cache all rows share).
  int64_t row = -1;
};

struct ProgramEntry {
  std::string section;     ///< "program.decode", "program.prefill"
  int64_t rows = 1;        ///< tokens per run
  int64_t windowWords = 0; ///< host-window high-water mark
  /// Each row is its own sequence, at its own position, with its own KV
  /// caches ("program.decode_batch").
  bool independentRows = false;
  /// The program leaves out the LM head and emits no logits
  /// ("program.prefill_no_head").
  bool noLogits = false;
  std::vector<WeightUse> weights;
};

struct HostOpEntry {
  uint64_t at = 0; ///< runs before word `at` (== segment end: after all)
  std::string kernel;
  nlohmann::json params; ///< hw/abi/HostKernels.def parameters
  bool sync = false;     ///< a pccx.host.sync stands right before it
};

struct SegmentEntry {
  std::string name, program;
  uint64_t begin = 0, end = 0;
  std::vector<HostOpEntry> hostOps;
  /// Other pccx.host.sync positions: before word `at`, after the host ops
  /// of that word.
  std::vector<uint64_t> syncs;
};

struct CacheEntry {
  std::string name;
  int64_t slots = 0, width = 0;
  std::string dtype = "f16"; ///< "f32", "f16", "int8"
  /// Empty: a host cache of `slots` rows. "keys" / "values": one weight
  /// record per kv head in device memory (hw/numerics/KvRecords.h), with
  /// `heads` kv heads and the attention `window` (0: global) of its layer.
  std::string layout;
  int64_t heads = 0, window = 0;
  int64_t headDim() const { return heads ? width / heads : 0; }
};

/// A float32 [rows, cols] tensor of the host_tensors section.
struct HostTensorEntry {
  std::string name;
  uint64_t offset = 0;
  int64_t rows = 0, cols = 0;
  WeightRecipe recipe;
};

/// An embedding table of the gather section: packed codes then one scale
/// per row, or with its recipe's group scales one per group of each row
/// (format "int4"/"int8"), or float32 rows ("f32").
struct GatherEntry {
  std::string name;
  uint64_t offset = 0, scalesOffset = 0;
  int64_t rows = 0, cols = 0;
  std::string format;
  WeightRecipe recipe;
  int64_t group = 0; ///< columns per scale (the recipe's scheme), 0 = a row
};

struct MemoryRegion {
  std::string name, space, program;
  int64_t offset = 0, size = 0;
};

/// The most rows a prefill step may have (pccx-compile --prefill-rows).
constexpr int64_t kMaxPrefillRows = 65535;

struct ModelManifest {
  std::string producer;
  /// The target profile the programs were compiled for.
  machine::Target target = machine::kDefaultTarget;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json compileOptions = nlohmann::json::object();
  int64_t vocabSize = 0;    ///< config.vocab_size
  int64_t maxSeqLen = 0;    ///< compile_options.max_seq_len
  /// compile_options.prefill_rows, within [1, kMaxPrefillRows]; 0 when
  /// absent.
  int64_t prefillRows = 0;
  std::vector<ProgramEntry> programs;
  std::vector<SegmentEntry> segments;
  std::vector<PatchPoint> patchPoints;
  std::vector<MemoryRegion> memoryMap;
  std::map<std::string, std::vector<std::string>> annotations;
  std::vector<CacheEntry> caches;
  std::vector<HostTensorEntry> hostTensors;
  std::vector<GatherEntry> gathers;
  std::vector<WeightRecordEntry> weightTable;
  uint64_t weightsBytes = 0;
  bool tokenizer = false; ///< a SentencePiece model in section "tokenizer"
  /// The checkpoint's chat template, verbatim (ChatTemplate.h), or empty.
  std::string chatTemplate;

  const ProgramEntry *program(const std::string &section) const;
};

/// The manifest as JSON (keys sorted: deterministic).
nlohmann::json toJson(const ModelManifest &manifest);

/// Reads and validates the model manifest of `bundle` (never throws).
/// Errors name the bundle, the table and the entry.
bool readModelManifest(const Bundle &bundle, ModelManifest *out,
                       std::string *error);

} // namespace pccx::bundle

#endif
