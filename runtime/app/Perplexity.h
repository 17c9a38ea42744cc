//===- Perplexity.h - scoring a text with a model ---------------*- C++ -*-===//
//
// Perplexity of a token sequence, computed in windows like
// llama-perplexity, and the figures that compare a model with a reference
// on the same windows (mean KL divergence, top-1 agreement, the paired
// perplexity ratio). The model and the reference are functions from a
// window's tokens to its logits rows, so the same code scores a bundle on
// any device and the float reference.
//
// Windows: text token t_j (j = 0..n-1, no BOS) is scored from the logits row
// of the position before it. Window w feeds [BOS] + t[w*S, w*S + C - 1)
// (C = ctx positions, S = stride; without a BOS token it feeds
// t[w*S, w*S + C) and its first token is context only). Each text token is
// scored exactly once, in the first window that predicts it: window 0
// scores all its tokens, window w > 0 only the tokens after the end of
// window w-1, so every later score has at least C - 1 - S tokens of context.
// Windows stop once the text is covered; the last one may be shorter.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_PERPLEXITY_H
#define PCCX_RUNTIME_APP_PERPLEXITY_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pccx::app {

struct PerplexityOptions {
  int64_t ctx = 128;      ///< positions per window, BOS included
  int64_t stride = 64;    ///< text tokens between window starts (1..ctx-1)
  int32_t bos = -1;       ///< prepended to every window when >= 0
  int64_t maxWindows = 0; ///< score only the first N windows (0: all)
};

/// One window: text tokens [begin, end) are fed (after the BOS, if any);
/// text tokens [firstScored, end) are scored.
struct Window {
  int64_t begin = 0, end = 0, firstScored = 0;
};

/// The windows over a text of `textTokens` tokens. False (with a message
/// naming the option) for a ctx/stride that cannot work or a text too short
/// to score anything.
bool planWindows(int64_t textTokens, const PerplexityOptions &options,
                 std::vector<Window> *windows, std::string *error);

/// Mean of a sample and the standard error of that mean (sample standard
/// deviation / sqrt(n); 0 for fewer than two values).
struct MeanEstimate {
  double mean = 0, stdErr = 0;
};
MeanEstimate estimateMean(const std::vector<double> &values);

struct PerplexityFigures {
  int64_t windows = 0, tokens = 0; ///< scored tokens
  MeanEstimate nll;                ///< per token, nats
  double ppl = 0, pplStdErr = 0;   ///< exp(mean nll), delta-method error
  bool hasReference = false;
  MeanEstimate referenceNll;
  double referencePpl = 0, referencePplStdErr = 0;
  /// ln(ppl / referencePpl) = mean of the paired nll differences, with the
  /// standard error of the pairs (tighter than the two errors combined).
  MeanEstimate lnPplRatio;
  MeanEstimate kl;       ///< KL(reference || model) per token, nats
  double top1Agree = 0;  ///< fraction of tokens whose argmax agrees
  double top1StdErr = 0; ///< binomial standard error of that fraction
};

/// Accumulates scored tokens (one logits row each, and optionally the
/// reference's row for the same position).
class PerplexityScorer {
public:
  void add(const float *logits, const float *reference, int64_t vocab,
           int32_t target);
  PerplexityFigures figures() const;

private:
  std::vector<double> nll_, refNll_, diff_, kl_;
  int64_t agree_ = 0;
};

/// Window tokens -> one logits row of `vocab` floats per token.
using LogitsFunction =
    std::function<bool(const std::vector<int32_t> &tokens,
                       std::vector<float> *logits, std::string *error)>;

/// Scores `text` (token ids without BOS) with `model`, and with `reference`
/// beside it when that is set. `progress` (optional) is called after each
/// window with (windows done, windows planned).
bool perplexity(const std::vector<int32_t> &text,
                const PerplexityOptions &options, int64_t vocab,
                const LogitsFunction &model, const LogitsFunction &reference,
                PerplexityFigures *figures, std::string *error,
                const std::function<void(int64_t, int64_t)> &progress = {});

/// The figures as text lines (what pccx-run prints) and as JSON.
std::string formatPerplexity(const PerplexityFigures &figures,
                             const PerplexityOptions &options);
nlohmann::json perplexityJson(const PerplexityFigures &figures,
                              const PerplexityOptions &options);

} // namespace pccx::app

#endif
