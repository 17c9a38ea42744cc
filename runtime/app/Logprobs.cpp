//===- Logprobs.cpp - log-probabilities of tokens -------------------------===//

#include "runtime/app/Logprobs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace pccx::app {

TokenLogprob scoreToken(const float *row, size_t vocab, int32_t token,
                        int top) {
  // log-softmax: x - (max + log sum exp(x - max)), in double so that the
  // sum over a vocabulary of 262 144 ids loses nothing the floats hold.
  double max = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab; ++i)
    max = std::max(max, double(row[i]));
  double sum = 0;
  for (size_t i = 0; i < vocab; ++i)
    sum += std::exp(double(row[i]) - max);
  const double logSum = max + std::log(sum);

  TokenLogprob out;
  out.token = token;
  out.logprob = token >= 0 && size_t(token) < vocab
                    ? double(row[token]) - logSum
                    : -std::numeric_limits<double>::infinity();
  // The best `top` ids, kept sorted: one pass, no sort of the vocabulary.
  const size_t want = size_t(std::max(top, 0));
  std::vector<std::pair<int32_t, float>> best;
  best.reserve(want + 1);
  for (size_t i = 0; i < vocab && want > 0; ++i) {
    if (best.size() == want && !(row[i] > best.back().second))
      continue;
    auto at = std::upper_bound(
        best.begin(), best.end(), row[i],
        [](float v, const std::pair<int32_t, float> &b) { return v > b.second; });
    best.insert(at, {int32_t(i), row[i]});
    if (best.size() > want)
      best.pop_back();
  }
  for (const auto &[id, logit] : best)
    out.top.push_back({id, double(logit) - logSum});
  return out;
}

void scorePromptRows(const std::vector<int32_t> &prompt, size_t from,
                     const std::vector<float> &rows, size_t vocab, int top,
                     std::vector<TokenLogprob> *out) {
  for (size_t i = 0; (i + 1) * vocab <= rows.size(); ++i)
    if (from + i + 1 < prompt.size())
      out->push_back(
          scoreToken(rows.data() + i * vocab, vocab, prompt[from + i + 1], top));
}

std::string tokenBytes(const Tokenizer &tokenizer, int32_t id) {
  // Pieces that are not text (special, unknown) stand for their spelling.
  std::string text = tokenizer.tokenText(id);
  return text.empty() ? tokenizer.piece(id) : text;
}

} // namespace pccx::app
