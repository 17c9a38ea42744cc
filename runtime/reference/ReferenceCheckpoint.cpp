//===- ReferenceCheckpoint.cpp - a checkpoint opened for the reference ----===//

#include "runtime/reference/ReferenceCheckpoint.h"

#include "runtime/import/MatFormer.h"

#include <nlohmann/json.hpp>

namespace pccx::reference {

namespace {
/// "MatFormer slice 'E2B' (30 layers)" or "35 layers, not sliced".
std::string describeModel(const import::Gemma3nTextConfig &c) {
  const std::string layers = std::to_string(c.num_hidden_layers) + " layers";
  return c.matformer_slice
             ? "MatFormer slice '" + c.matformer_slice->name + "', " + layers
             : layers + ", not sliced";
}
} // namespace

std::unique_ptr<ReferenceCheckpoint>
ReferenceCheckpoint::open(const std::string &dir, std::string *error,
                          const std::string &matformerSlice,
                          const nlohmann::json *bundleConfig) {
  auto opened = std::make_unique<ReferenceCheckpoint>();
  // The bundle's model, when its config reads as one.
  import::Gemma3nTextConfig recorded;
  std::string unread;
  const bool haveRecorded =
      bundleConfig &&
      import::parseGemma3nConfig(
          bundleConfig->dump(-1, ' ', false,
                             nlohmann::json::error_handler_t::replace),
          &recorded, &unread);
  if (!(matformerSlice.empty() && haveRecorded
            ? import::reopenCheckpoint(dir, recorded, &opened->config,
                                       &opened->checkpoint, error)
            : import::openCheckpoint(dir, matformerSlice, &opened->config,
                                     &opened->checkpoint, error)) ||
      !import::detectTextPrefix(*opened->checkpoint, &opened->prefix, error))
    return nullptr;
  if (haveRecorded &&
      (recorded.matformer_slice || opened->config.matformer_slice) &&
      recorded.toJson() != opened->config.toJson()) {
    *error = "the float reference's model (" + describeModel(opened->config) +
             ") is not the bundle's (" + describeModel(recorded) + ")";
    return nullptr;
  }
  opened->original =
      std::make_unique<CheckpointWeights>(*opened->checkpoint, opened->prefix);
  return opened;
}

std::unique_ptr<WindowedReference>
WindowedReference::open(const std::string &dir, int64_t positions,
                        std::string *error,
                        const std::string &matformerSlice,
                        const nlohmann::json *bundleConfig) {
  auto ref = std::unique_ptr<WindowedReference>(new WindowedReference);
  ref->checkpoint_ =
      ReferenceCheckpoint::open(dir, error, matformerSlice, bundleConfig);
  if (!ref->checkpoint_)
    return nullptr;
  ref->model_ = std::make_unique<Model>(ref->checkpoint_->config,
                                        *ref->checkpoint_->original, positions);
  if (!ref->model_->ok(error))
    return nullptr;
  return ref;
}

bool WindowedReference::logits(const std::vector<int32_t> &tokens,
                               std::vector<float> *out, std::string *error) {
  model_->reset();
  if (model_->forward(tokens, *out, error))
    return true;
  *error = "float reference: " + *error;
  return false;
}

} // namespace pccx::reference
