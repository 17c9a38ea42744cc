//===- ReferenceCheckpoint.cpp - a checkpoint opened for the reference ----===//

#include "runtime/reference/ReferenceCheckpoint.h"

namespace pccx::reference {

std::unique_ptr<ReferenceCheckpoint>
ReferenceCheckpoint::open(const std::string &dir, std::string *error) {
  auto opened = std::make_unique<ReferenceCheckpoint>();
  if (!import::loadGemma3nConfig(dir + "/config.json", &opened->config, error))
    return nullptr;
  opened->checkpoint = import::Checkpoint::open(dir, error);
  if (!opened->checkpoint ||
      !import::detectTextPrefix(*opened->checkpoint, &opened->prefix, error) ||
      !import::validateCheckpoint(opened->config, *opened->checkpoint, error))
    return nullptr;
  opened->original =
      std::make_unique<CheckpointWeights>(*opened->checkpoint, opened->prefix);
  return opened;
}

std::unique_ptr<WindowedReference>
WindowedReference::open(const std::string &dir, int64_t positions,
                        std::string *error) {
  auto ref = std::unique_ptr<WindowedReference>(new WindowedReference);
  ref->checkpoint_ = ReferenceCheckpoint::open(dir, error);
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
