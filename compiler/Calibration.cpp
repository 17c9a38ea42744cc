//===- Calibration.cpp - option choices measured on calibration text ------===//

#include "compiler/Calibration.h"

#include "hw/support/InputFile.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/reference/InputStatistics.h"
#include "runtime/reference/Sensitivity.h"

#include "llvm/Support/Format.h"

#include <algorithm>

namespace pccx {

namespace {

/// Windows of GPTQ calibration text: enough tokens for the Gram matrices of
/// the widest inputs, one float-reference pass each.
constexpr size_t kGptqWindows = 64;
/// Windows the INT8 budget scores each tensor on.
constexpr size_t kBudgetWindows = 4;

/// Calibration text as windows for measureSensitivity and the GPTQ
/// statistics: `textPath` tokenized with the SentencePiece model at
/// `tokenizerPath`, cut into consecutive windows of BOS + positions - 1
/// tokens, at most `maxWindows` of them.
bool tokenizeCalibrationText(const std::string &textPath,
                             const std::string &tokenizerPath, int32_t bos,
                             int64_t positions, size_t maxWindows,
                             std::vector<std::vector<int32_t>> *windows,
                             std::string *error) {
  std::string text, model;
  if (!support::readInputFile(textPath, support::kMaxDataFileBytes, &text,
                              error) ||
      !support::readInputFile(tokenizerPath, support::kMaxTokenizerFileBytes,
                              &model, error))
    return false;
  auto tokenizer = Tokenizer::load(
      reinterpret_cast<const uint8_t *>(model.data()), model.size(), error);
  std::vector<int32_t> ids;
  if (!tokenizer || !tokenizer->encode(text, &ids, error)) {
    *error = tokenizerPath + ": " + *error;
    return false;
  }
  if (bos < 0 || positions < 2) {
    *error = "calibration needs a BOS token and windows of at least 2 "
             "positions";
    return false;
  }
  windows->clear();
  const size_t perWindow = size_t(positions - 1);
  for (size_t at = 0; at < ids.size() && windows->size() < maxWindows;
       at += perWindow) {
    std::vector<int32_t> w = {bos};
    w.insert(w.end(), ids.begin() + long(at),
             ids.begin() + long(std::min(ids.size(), at + perWindow)));
    windows->push_back(std::move(w));
  }
  if (windows->empty()) {
    *error = textPath + ": no calibration tokens";
    return false;
  }
  return true;
}

/// The calibration text as windows of up to 128 positions (fewer when the
/// KV cache holds fewer), at most `maxWindows`.
bool calibrationWindows(const reference::ReferenceCheckpoint &checkpoint,
                        llvm::StringRef checkpointDir,
                        const CompileOptions &options, size_t maxWindows,
                        int64_t *positions,
                        std::vector<std::vector<int32_t>> *windows,
                        std::string *error) {
  *positions = std::min<int64_t>(128, options.maxSeqLen);
  return tokenizeCalibrationText(
      options.calibration, tokenizerModel(options, checkpointDir.str()),
      int32_t(checkpoint.config.bos_token_id.value_or(-1)), *positions,
      maxWindows, windows, error);
}

} // namespace

bool resolveInt8Budget(llvm::StringRef checkpointDir, CompileOptions &options,
                       llvm::raw_ostream &log, std::string *error) {
  if (options.int8Budget.empty())
    return true;
  double fraction;
  if (!options.int8BudgetFraction(&fraction, error))
    return false;
  auto checkpoint =
      reference::ReferenceCheckpoint::open(checkpointDir.str(), error,
                                           options.matformerSlice);
  if (!checkpoint)
    return false;
  int64_t positions = 0;
  std::vector<std::vector<int32_t>> windows;
  if (!calibrationWindows(*checkpoint, checkpointDir, options, kBudgetWindows,
                          &positions, &windows, error))
    return false;
  std::vector<reference::TensorSensitivity> measured;
  if (!reference::measureSensitivity(*checkpoint, windows, positions,
                                     options.int4Scheme(), &measured, error))
    return false;
  std::vector<std::string> chosen =
      reference::chooseInt8Tensors(measured, fraction);
  for (const auto &t : measured) {
    bool kept = std::count(chosen.begin(), chosen.end(), t.name) != 0;
    log << llvm::format("int8-budget: %-44s KL %.6f  int4 %lld bytes, "
                        "int8 +%lld%s\n",
                        t.name.c_str(), t.meanKl, (long long)t.int4Bytes,
                        (long long)(t.int8Bytes - t.int4Bytes),
                        kept ? "  -> int8" : "");
  }
  std::string regex = reference::exactNamesRegex(chosen);
  if (!regex.empty())
    options.int8Weights =
        options.int8Weights.empty() ? regex : options.int8Weights + "|" + regex;
  return true;
}

bool collectGptqStatistics(llvm::StringRef checkpointDir,
                           const CompileOptions &options,
                           std::map<std::string, hw::InputGram> *grams,
                           llvm::raw_ostream &log, std::string *error) {
  auto checkpoint =
      reference::ReferenceCheckpoint::open(checkpointDir.str(), error,
                                           options.matformerSlice);
  if (checkpoint && options.calibration.empty()) {
    if (!reference::lmHeadSelfGram(*checkpoint, grams, error))
      return false;
    log << "int4-rounding gptq: no --calibration; the LM head is rounded "
           "against the Gram matrix of its own rows, every other tensor to "
           "nearest\n";
    return true;
  }
  int64_t positions = 0;
  std::vector<std::vector<int32_t>> windows;
  if (!checkpoint ||
      !calibrationWindows(*checkpoint, checkpointDir, options, kGptqWindows,
                          &positions, &windows, error) ||
      !reference::collectInputGrams(*checkpoint, windows, positions, grams,
                                    error))
    return false;
  size_t tokens = 0;
  for (const auto &w : windows)
    tokens += w.size();
  log << "int4-rounding gptq: input statistics of " << grams->size()
      << " tensors from " << tokens << " calibration tokens in "
      << windows.size() << " windows\n";
  return true;
}

} // namespace pccx
