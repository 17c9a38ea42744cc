//===- ReferenceCheckpoint.h - a checkpoint for the reference -*- C++ -*-===//
//
// Opens a checkpoint directory the way every float-reference user needs it:
// config.json parsed, the safetensors mapped, the text-decoder prefix found
// and every tensor checked against the config, with the original weights
// ready to read.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_REFERENCECHECKPOINT_H
#define PCCX_RUNTIME_REFERENCE_REFERENCECHECKPOINT_H

#include "runtime/reference/Reference.h"

namespace pccx::reference {

struct ReferenceCheckpoint {
  import::Gemma3nTextConfig config;
  std::unique_ptr<import::Checkpoint> checkpoint;
  std::string prefix; ///< text-decoder prefix ("model.", ...)
  std::unique_ptr<CheckpointWeights> original;

  /// Null with a message naming the file or tensor on any problem. Cut to
  /// the MatFormer slice `matformerSlice` names when it is not empty
  /// (runtime/import/MatFormer.h); otherwise, for a bundle whose config
  /// (`bundleConfig`) records a slice cut from DIR's model, cut the same.
  static std::unique_ptr<ReferenceCheckpoint>
  open(const std::string &dir, std::string *error,
       const std::string &matformerSlice = "",
       const nlohmann::json *bundleConfig = nullptr);
};

/// The float reference on a checkpoint's original weights, scoring
/// independent windows: every call starts again at position 0.
class WindowedReference {
public:
  /// Windows of at most `positions` tokens.
  static std::unique_ptr<WindowedReference>
  open(const std::string &dir, int64_t positions, std::string *error,
       const std::string &matformerSlice = "",
       const nlohmann::json *bundleConfig = nullptr);
  /// One row of vocab_size logits per token.
  bool logits(const std::vector<int32_t> &tokens, std::vector<float> *out,
              std::string *error);
  int64_t vocabSize() const { return checkpoint_->config.vocab_size; }

private:
  std::unique_ptr<ReferenceCheckpoint> checkpoint_;
  std::unique_ptr<Model> model_;
};

} // namespace pccx::reference

#endif
