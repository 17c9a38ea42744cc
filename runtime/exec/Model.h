//===- Model.h - a loaded bundle, ready to run ------------------*- C++ -*-===//
//
// Opens a .pccx bundle (mmap, checksums, version checks) and turns its
// manifest into the structures the per-token driver needs: programs with
// their segments, host operations, patch points and weight plan; KV caches;
// host tensors and gather tables pointing into the mapped sections.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_EXEC_MODEL_H
#define PCCX_RUNTIME_EXEC_MODEL_H

#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/Manifest.h"
#include "runtime/host/HostKernels.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pccx::exec {

struct HostOp {
  uint64_t at = 0; ///< runs before word `at` (after the segment if == end)
  std::string kernel;
  nlohmann::json params;
};

struct Segment {
  std::string name;
  uint64_t begin = 0, end = 0;
  std::vector<HostOp> hostOps;
};

struct WeightRecord {
  bool dynamic = false;
  const uint8_t *data = nullptr;
  uint64_t bytes = 0;
};

struct Program {
  std::string section;
  int64_t rows = 1; ///< tokens per run
  std::vector<uint64_t> words;
  std::vector<Segment> segments;
  std::vector<bundle::PatchPoint> patches;
  std::map<uint64_t, WeightRecord> records; ///< by word index
};

struct CacheSpec {
  int64_t slots = 0, width = 0;
  host::KvDtype dtype = host::KvDtype::F16; ///< absent in the manifest: f16
};

class Model {
public:
  static std::unique_ptr<Model> load(const std::string &path,
                                     std::string *error);

  const bundle::Bundle &bundle() const { return *bundle_; }
  const nlohmann::json &config() const { return config_; }
  const Program *decode() const { return decode_.get(); }
  const Program *prefill() const { return prefill_.get(); }
  const std::map<std::string, CacheSpec> &caches() const { return caches_; }
  const std::map<std::string, host::HostTensor> &tensors() const {
    return tensors_;
  }
  const std::map<std::string, host::GatherTable> &gathers() const {
    return gathers_;
  }
  int64_t vocabSize() const { return vocab_; }
  /// Positions the KV caches hold (the compile's --max-seq-len).
  int64_t maxPositions() const { return maxPositions_; }
  std::vector<int32_t> eosTokens() const;
  int32_t bosToken() const;
  /// The embedded tokenizer model, or null.
  const uint8_t *tokenizer(size_t *bytes) const;

private:
  Model() = default;
  std::unique_ptr<bundle::Bundle> bundle_;
  nlohmann::json config_;
  std::unique_ptr<Program> decode_, prefill_;
  std::map<std::string, CacheSpec> caches_;
  std::map<std::string, host::HostTensor> tensors_;
  std::map<std::string, host::GatherTable> gathers_;
  int64_t vocab_ = 0, maxPositions_ = 0;
};

} // namespace pccx::exec

#endif
