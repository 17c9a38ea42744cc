//===- Sensitivity.cpp - which tensors carry the INT4 loss ----------------===//

#include "runtime/reference/Sensitivity.h"


#include "hw/numerics/Elementary.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pccx::reference {

namespace {

/// Logits of every window, one vector per window.
bool runWindows(const ReferenceCheckpoint &checkpoint, const Weights &weights,
                const std::vector<std::vector<int32_t>> &windows,
                int64_t positions, std::vector<std::vector<float>> *logits,
                std::string *error) {
  Model model(checkpoint.config, weights, positions);
  if (!model.ok(error))
    return false;
  logits->resize(windows.size());
  for (size_t w = 0; w < windows.size(); ++w) {
    model.reset();
    if (!model.forward(windows[w], (*logits)[w], error))
      return false;
  }
  return true;
}

} // namespace

bool measureSensitivity(const ReferenceCheckpoint &checkpoint,
                        const std::vector<std::vector<int32_t>> &windows,
                        int64_t positions, hw::QuantScheme int4,
                        std::vector<TensorSensitivity> *result,
                        std::string *error,
                        const std::function<void(size_t, size_t)> &progress) {
  result->clear();
  const int64_t vocab = checkpoint.config.vocab_size;
  std::vector<std::vector<float>> original, quantized;
  if (!runWindows(checkpoint, *checkpoint.original, windows, positions,
                  &original, error))
    return false;
  std::vector<import::ExpectedTensor> tensors;
  for (const import::ExpectedTensor &t :
       import::expectedTensors(checkpoint.config, checkpoint.prefix)) {
    std::string relative =
        t.name.compare(0, checkpoint.prefix.size(), checkpoint.prefix) == 0
            ? t.name.substr(checkpoint.prefix.size())
            : t.name;
    if (t.shape.size() == 2 && import::isInt4ByDefault(relative))
      tensors.push_back({relative, t.shape});
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    const import::ExpectedTensor &t = tensors[k];
    Int4Weights one(
        *checkpoint.original,
        [&](const std::string &name) { return name == t.name; }, int4);
    if (!runWindows(checkpoint, one, windows, positions, &quantized, error))
      return false;
    double kl = 0;
    int64_t rows = 0;
    for (size_t w = 0; w < windows.size(); ++w)
      for (size_t r = 0; r < windows[w].size(); ++r, ++rows)
        kl += hw::klDivergence(original[w].data() + r * size_t(vocab),
                                quantized[w].data() + r * size_t(vocab), vocab);
    TensorSensitivity s;
    s.name = t.name;
    s.meanKl = rows ? kl / double(rows) : 0;
    s.int4Bytes = hw::tensorRecordBytes(int4, t.shape[0], t.shape[1]);
    s.int8Bytes =
        hw::recordBytes(hw::WeightFormat::Int8, t.shape[0], t.shape[1]);
    result->push_back(s);
    if (progress)
      progress(k + 1, tensors.size());
  }
  return true;
}

std::vector<std::string>
chooseInt8Tensors(const std::vector<TensorSensitivity> &tensors,
                  double budget) {
  int64_t total = 0;
  for (const TensorSensitivity &t : tensors)
    total += t.int4Bytes;
  std::vector<const TensorSensitivity *> order;
  for (const TensorSensitivity &t : tensors)
    order.push_back(&t);
  auto gain = [](const TensorSensitivity *t) {
    return t->meanKl /
           double(std::max<int64_t>(1, t->int8Bytes - t->int4Bytes));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const TensorSensitivity *a, const TensorSensitivity *b) {
                     if (gain(a) != gain(b))
                       return gain(a) > gain(b);
                     return a->name < b->name;
                   });
  const double allowed = budget * double(total);
  double spent = 0;
  std::vector<std::string> chosen;
  for (const TensorSensitivity *t : order) {
    double extra = double(t->int8Bytes - t->int4Bytes);
    if (t->meanKl <= 0 || spent + extra > allowed)
      continue; // a smaller tensor further down may still fit
    spent += extra;
    chosen.push_back(t->name);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::string exactNamesRegex(const std::vector<std::string> &names) {
  std::string regex;
  for (const std::string &name : names) {
    if (!regex.empty())
      regex += "|";
    for (char c : name) {
      if (std::string("\\.^$|()[]{}*+?").find(c) != std::string::npos)
        regex += '\\';
      regex += c;
    }
  }
  return regex;
}

} // namespace pccx::reference
