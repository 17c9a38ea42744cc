//===- InputStatistics.cpp - projection inputs on calibration text --------===//

#include "compiler/reference/InputStatistics.h"

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

} // namespace pccx::reference
