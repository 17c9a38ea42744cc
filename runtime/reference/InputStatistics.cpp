//===- InputStatistics.cpp - projection inputs on calibration text --------===//

#include "runtime/reference/InputStatistics.h"

#include <algorithm>

namespace pccx::reference {

bool collectInputGrams(const ReferenceCheckpoint &checkpoint,
                       const std::vector<std::vector<int32_t>> &windows,
                       int64_t positions,
                       std::map<std::string, hw::InputGram> *grams,
                       std::string *error) {
  grams->clear();
  Model model(checkpoint.config, *checkpoint.original, positions);
  if (!model.ok(error))
    return false;
  model.observeProjections(
      [&](const std::string &name, const float *x, int64_t T, int64_t columns) {
        if (!import::isInt4ByDefault(name))
          return;
        const std::string full =
            name == "lm_head.weight" ? name : checkpoint.prefix + name;
        hw::InputGram &gram = (*grams)[full];
        gram.columns = columns;
        hw::accumulateGram(x, T, &gram);
      });
  std::vector<float> logits;
  for (const std::vector<int32_t> &window : windows) {
    model.reset();
    if (!model.forward(window, logits, error))
      return false;
  }
  return true;
}

bool lmHeadSelfGram(const ReferenceCheckpoint &checkpoint,
                    std::map<std::string, hw::InputGram> *grams,
                    std::string *error) {
  grams->clear();
  const bool tied = checkpoint.config.tie_word_embeddings;
  const std::string name = tied ? "embed_tokens.weight" : "lm_head.weight";
  const int64_t rows = checkpoint.config.vocab_size;
  const int64_t columns = checkpoint.config.hidden_size;
  hw::InputGram &gram =
      (*grams)[tied ? checkpoint.prefix + name : std::string(name)];
  gram.columns = columns;
  // A few MiB of rows at a time, streamed from the checkpoint.
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 20) / columns);
  std::vector<float> buf(size_t(std::min(block, rows) * columns));
  for (int64_t r = 0; r < rows; r += block) {
    const int64_t n = std::min(block, rows - r);
    if (!checkpoint.original->readRows(name, r, n, columns, buf.data(), error))
      return false;
    hw::accumulateGram(buf.data(), n, &gram);
  }
  return true;
}

} // namespace pccx::reference
