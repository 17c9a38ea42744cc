//===- Perplexity.cpp - scoring a text with a model -----------------------===//

#include "runtime/app/Perplexity.h"

#include "hw/numerics/Elementary.h"
#include "hw/support/Format.h"

#include <algorithm>
#include <cmath>

namespace pccx::app {

bool planWindows(int64_t textTokens, const PerplexityOptions &options,
                 std::vector<Window> *windows, std::string *error) {
  windows->clear();
  if (options.ctx < 2) {
    *error =
        "--ctx must be at least 2 (got " + std::to_string(options.ctx) + ")";
    return false;
  }
  if (options.stride < 1 || options.stride > options.ctx - 1) {
    *error = "--stride must be between 1 and ctx - 1 = " +
             std::to_string(options.ctx - 1) + " (got " +
             std::to_string(options.stride) + ")";
    return false;
  }
  // Without a BOS the first fed token has no row predicting it.
  const int64_t unscoredHead = options.bos >= 0 ? 0 : 1;
  const int64_t textPerWindow = options.ctx - (options.bos >= 0 ? 1 : 0);
  if (textTokens < 1 + unscoredHead) {
    *error = "the text has " + std::to_string(textTokens) +
             " token(s); scoring needs at least " +
             std::to_string(1 + unscoredHead);
    return false;
  }
  int64_t scoredUpTo = 0;
  for (int64_t begin = 0;; begin += options.stride) {
    Window w;
    w.begin = begin;
    w.end = std::min(begin + textPerWindow, textTokens);
    w.firstScored = std::max(scoredUpTo, begin + unscoredHead);
    if (w.firstScored < w.end)
      windows->push_back(w);
    scoredUpTo = w.end;
    if (w.end == textTokens || (options.maxWindows > 0 &&
                                int64_t(windows->size()) == options.maxWindows))
      break;
  }
  return true;
}

MeanEstimate estimateMean(const std::vector<double> &values) {
  MeanEstimate e;
  const size_t n = values.size();
  if (n == 0)
    return e;
  double sum = 0;
  for (double v : values)
    sum += v;
  e.mean = sum / double(n);
  if (n < 2)
    return e;
  double squares = 0;
  for (double v : values)
    squares += (v - e.mean) * (v - e.mean);
  e.stdErr = std::sqrt(squares / double(n - 1) / double(n));
  return e;
}

void PerplexityScorer::add(const float *logits, const float *reference,
                           int64_t vocab, int32_t target) {
  double nll = hw::negativeLogLikelihood(logits, vocab, target);
  nll_.push_back(nll);
  if (!reference)
    return;
  double refNll = hw::negativeLogLikelihood(reference, vocab, target);
  refNll_.push_back(refNll);
  diff_.push_back(nll - refNll);
  kl_.push_back(hw::klDivergence(reference, logits, vocab));
  if (std::max_element(logits, logits + vocab) - logits ==
      std::max_element(reference, reference + vocab) - reference)
    ++agree_;
}

PerplexityFigures PerplexityScorer::figures() const {
  PerplexityFigures f;
  f.tokens = int64_t(nll_.size());
  f.nll = estimateMean(nll_);
  f.ppl = hw::exp(f.nll.mean);
  f.pplStdErr = f.ppl * f.nll.stdErr;
  if (refNll_.empty())
    return f;
  f.hasReference = true;
  f.referenceNll = estimateMean(refNll_);
  f.referencePpl = hw::exp(f.referenceNll.mean);
  f.referencePplStdErr = f.referencePpl * f.referenceNll.stdErr;
  f.lnPplRatio = estimateMean(diff_);
  f.kl = estimateMean(kl_);
  double n = double(refNll_.size());
  f.top1Agree = double(agree_) / n;
  f.top1StdErr = std::sqrt(f.top1Agree * (1 - f.top1Agree) / n);
  return f;
}

bool perplexity(const std::vector<int32_t> &text,
                const PerplexityOptions &options, int64_t vocab,
                const LogitsFunction &model, const LogitsFunction &reference,
                PerplexityFigures *figures, std::string *error,
                const std::function<void(int64_t, int64_t)> &progress) {
  std::vector<Window> windows;
  if (!planWindows(int64_t(text.size()), options, &windows, error))
    return false;
  const int64_t unscoredHead = options.bos >= 0 ? 0 : 1;
  PerplexityScorer scorer;
  std::vector<int32_t> tokens;
  std::vector<float> logits, refLogits;
  for (size_t k = 0; k < windows.size(); ++k) {
    const Window &w = windows[k];
    tokens.clear();
    if (options.bos >= 0)
      tokens.push_back(options.bos);
    tokens.insert(tokens.end(), text.begin() + w.begin, text.begin() + w.end);
    logits.clear();
    if (!model(tokens, &logits, error))
      return false;
    if (reference) {
      refLogits.clear();
      if (!reference(tokens, &refLogits, error))
        return false;
    }
    const size_t rowValues = tokens.size() * size_t(vocab);
    if (logits.size() != rowValues ||
        (reference && refLogits.size() != rowValues)) {
      *error = "a window of " + std::to_string(tokens.size()) +
               " tokens gave the wrong number of logits";
      return false;
    }
    for (int64_t j = w.firstScored; j < w.end; ++j) {
      // The row of the position before text token j.
      int64_t row = j - w.begin - unscoredHead;
      scorer.add(logits.data() + row * vocab,
                 reference ? refLogits.data() + row * vocab : nullptr, vocab,
                 text[size_t(j)]);
    }
    if (progress)
      progress(int64_t(k + 1), int64_t(windows.size()));
  }
  *figures = scorer.figures();
  figures->windows = int64_t(windows.size());
  return true;
}

std::string formatPerplexity(const PerplexityFigures &f,
                             const PerplexityOptions &options) {
  std::string out = formatString(
      "perplexity: %.4f +/- %.4f (%lld tokens scored in %lld windows of %lld "
      "positions, stride %lld)\n",
      f.ppl, f.pplStdErr, (long long)f.tokens, (long long)f.windows,
      (long long)options.ctx, (long long)options.stride);
  if (!f.hasReference)
    return out;
  out += formatString("float reference, original weights: perplexity %.4f "
                      "+/- %.4f\n",
                      f.referencePpl, f.referencePplStdErr);
  out += formatString("perplexity vs reference: %+.3f %% +/- %.3f %%\n",
                      (hw::exp(f.lnPplRatio.mean) - 1) * 100,
                      hw::exp(f.lnPplRatio.mean) * f.lnPplRatio.stdErr * 100);
  out += formatString("mean KL divergence (reference || model): %.6f +/- "
                      "%.6f nats\n",
                      f.kl.mean, f.kl.stdErr);
  out += formatString("top-1 agreement with the reference: %.4f +/- %.4f\n",
                      f.top1Agree, f.top1StdErr);
  return out;
}

nlohmann::json perplexityJson(const PerplexityFigures &f,
                              const PerplexityOptions &options) {
  nlohmann::json j = {
      {"ctx", options.ctx},     {"stride", options.stride},
      {"windows", f.windows},   {"tokens", f.tokens},
      {"mean_nll", f.nll.mean}, {"mean_nll_stderr", f.nll.stdErr},
      {"ppl", f.ppl},           {"ppl_stderr", f.pplStdErr}};
  if (f.hasReference)
    j["reference"] = {
        {"ppl", f.referencePpl},
        {"ppl_stderr", f.referencePplStdErr},
        {"mean_nll", f.referenceNll.mean},
        {"ln_ppl_ratio", f.lnPplRatio.mean},
        {"ln_ppl_ratio_stderr", f.lnPplRatio.stdErr},
        {"ppl_change_percent", (hw::exp(f.lnPplRatio.mean) - 1) * 100},
        {"mean_kl", f.kl.mean},
        {"mean_kl_stderr", f.kl.stdErr},
        {"top1_agreement", f.top1Agree},
        {"top1_agreement_stderr", f.top1StdErr}};
  return j;
}

} // namespace pccx::app
