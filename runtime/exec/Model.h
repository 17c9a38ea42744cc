//===- Model.h - a loaded bundle, ready to run ------------------*- C++ -*-===//
//
// Opens a .pccx bundle (mmap, checksums, version checks) and prepares it
// once for the per-token session: programs with their segments, bound host
// calls, sync points, located patch fields and resolved weight records; KV
// cache specs; host tensors and gather tables pointing into the mapped
// sections. Everything a step needs is decided here; a step only executes.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_EXEC_MODEL_H
#define PCCX_RUNTIME_EXEC_MODEL_H

#include "hw/abi/PatchSources.h"
#include "hw/isa/Isa.h"
#include "hw/machine/Target.h"
#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"
#include "runtime/host/HostKernels.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pccx::exec {

/// A patch point with its field located in the word once, at open: the
/// runtime only computes the value, checks it against the field's width and
/// writes the bits.
struct PatchSite {
  uint32_t word = 0;
  uint8_t lo = 0;        ///< first bit of the field
  uint32_t maxValue = 0; ///< the field's largest value
  bundle::PatchSource source = bundle::PatchSource::Position;
  int64_t scale = 1, offset = 0, delta = 0, window = 0;
  isa::Field field = isa::Field(0); ///< for messages
};

/// What the runtime does at a word index besides issuing the word.
struct Event {
  enum class Kind : uint8_t {
    Sync, ///< wait for every issued instruction (a pccx.host.sync)
    Host, ///< run bound call `call`
  };
  Kind kind = Kind::Sync;
  uint32_t at = 0;   ///< before word `at` (== segment end: after the last)
  uint32_t call = 0; ///< index into Program::calls
};

struct Segment {
  std::string name;
  uint32_t begin = 0, end = 0;
  std::vector<Event> events; ///< in execution order
};

/// The weight-stream bytes a GEMV/GEMM word consumes.
struct WeightRef {
  enum class Kind : uint8_t {
    None,
    Static,  ///< in the weights section
    Dynamic, ///< produced by a host kernel during the step
    Cache,   ///< the record of kv head `part` of KV cache `cache`
    Mask,    ///< the attention mask of step row `part` over cache `cache`
  };
  Kind kind = Kind::None;
  int32_t cache = -1, part = 0; ///< Cache, Mask
  /// Cache in a program with independent rows: the cache of this step row's
  /// sequence (-1: of the sequence every row belongs to).
  int32_t row = -1;
  uint64_t offset = 0, bytes = 0; ///< Static: within the weights section
};

/// A program prepared for execution when the bundle is opened: words
/// decoded and checked, patch fields located, host calls bound, weight
/// records resolved. Executing it allocates and parses nothing.
struct Program {
  std::string section;
  int64_t rows = 1; ///< tokens per run
  /// Rows are sequences of their own (the batch program): each row has its
  /// own position and KV caches.
  bool independentRows = false;
  /// Emits no logits: the prefill program without its LM head.
  bool noLogits = false;
  std::vector<uint64_t> words;
  std::vector<Segment> segments;
  std::vector<PatchSite> patches;
  std::vector<WeightRef> weights; ///< one per word
  std::vector<host::BoundCall> calls;
  std::vector<std::string> callKernels; ///< kernel name of each call
};

struct CacheSpec {
  std::string name;
  int64_t slots = 0, width = 0;
  host::KvStorage dtype = host::KvStorage::F16; ///< absent in the manifest: f16
  /// KeyRecords/ValueRecords caches: kv heads and the attention window.
  int64_t heads = 1, window = 0;
  bool records() const {
    return dtype == host::KvStorage::KeyRecords ||
           dtype == host::KvStorage::ValueRecords;
  }
};

class Model {
public:
  /// Host memory (bytes) a session of one model may need for its KV caches
  /// and one step's logits, at most; a bundle asking for more is refused on
  /// load.
  static constexpr uint64_t kMaxSessionBytes = uint64_t(1) << 36;
  /// kMaxSessionBytes or the machine's physical memory, the smaller: a
  /// session that cannot be backed by RAM is an error at open, not an
  /// out-of-memory kill mid-generation.
  static uint64_t defaultHostMemoryLimit();

  /// `hostMemoryLimit` 0 means defaultHostMemoryLimit().
  static std::unique_ptr<Model> load(const std::string &path,
                                     std::string *error,
                                     uint64_t hostMemoryLimit = 0);

  const bundle::Bundle &bundle() const { return *bundle_; }
  const nlohmann::json &config() const { return config_; }
  const Program *decode() const { return decode_.get(); }
  const Program *prefill() const { return prefill_.get(); }
  /// The prefill program without the LM head (for steps whose logits are
  /// not read), or null in bundles that lack it.
  const Program *prefillWithoutLogits() const {
    return prefillNoLogits_.get();
  }
  /// The batched decode programs (rows independent sequences), fewest
  /// rows first; empty without --decode-batch.
  const std::vector<std::unique_ptr<Program>> &batches() const {
    return batches_;
  }
  /// The one with the most rows, or null.
  const Program *batch() const {
    return batches_.empty() ? nullptr : batches_.back().get();
  }
  /// Rows of one sequence a step may write: the prefill rows the sliding
  /// caches were sized for (compile_options.prefill_rows).
  int64_t prefillRows() const { return prefillRows_; }
  /// Host memory (bytes) the KV caches of one more sequence take, at most.
  uint64_t sequenceHostBytes() const { return sequenceBytes_; }
  /// In the order host calls index them.
  const std::vector<CacheSpec> &caches() const { return caches_; }
  const std::map<std::string, host::HostTensor> &tensors() const {
    return tensors_;
  }
  const std::map<std::string, host::GatherTable> &gathers() const {
    return gathers_;
  }
  int64_t vocabSize() const { return vocab_; }
  /// Host memory (bytes) a session of this model may allocate, at most: what
  /// load() compared with its limit.
  uint64_t sessionHostBytes() const { return sessionBytes_; }
  /// The target profile the programs were compiled for.
  machine::Target target() const { return target_; }
  /// Positions the KV caches hold (the compile's --max-seq-len).
  int64_t maxSeqLen() const { return maxSeqLen_; }
  std::vector<int32_t> eosTokens() const;
  int32_t bosToken() const;
  /// The weights section (every static weight record), or null.
  const uint8_t *weightsSection(size_t *bytes) const;
  /// The embedded tokenizer model, or null.
  const uint8_t *tokenizer(size_t *bytes) const;

private:
  Model() = default;
  std::unique_ptr<bundle::Bundle> bundle_;
  nlohmann::json config_;
  std::unique_ptr<Program> decode_, prefill_, prefillNoLogits_;
  std::vector<std::unique_ptr<Program>> batches_;
  std::vector<CacheSpec> caches_;
  std::map<std::string, int> cacheIndex_;
  std::map<std::string, host::HostTensor> tensors_;
  std::map<std::string, host::GatherTable> gathers_;
  int64_t vocab_ = 0, maxSeqLen_ = 0;
  uint64_t sessionBytes_ = 0, sequenceBytes_ = 0;
  int64_t prefillRows_ = 1;
  machine::Target target_ = machine::kDefaultTarget;
};

} // namespace pccx::exec

#endif
