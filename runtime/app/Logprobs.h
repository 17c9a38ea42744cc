//===- Logprobs.h - log-probabilities of tokens -----------------*- C++ -*-===//
//
// What a logits row says of a token: its log-probability (log-softmax of
// the row, in double) and the most likely tokens with theirs. The row is
// the one the sampler chooses from, before penalties, temperature and the
// other warpers, so the values describe the model, not the sampling.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_APP_LOGPROBS_H
#define PCCX_RUNTIME_APP_LOGPROBS_H

#include "runtime/tokenizer/Tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pccx::app {

struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0;
  /// The most likely ids and their log-probabilities, best first (equal
  /// values: the lower id first).
  std::vector<std::pair<int32_t, double>> top;
};

/// `token`'s log-probability under `row` (vocab logits) and the `top`
/// most likely ids'.
TokenLogprob scoreToken(const float *row, size_t vocab, int32_t token,
                        int top);

/// Appends to `out` the scores of the prompt tokens that logits `rows`
/// (of positions from, from + 1, ...) predict: row i scores token
/// from + i + 1; the row of the prompt's last position scores nothing.
void scorePromptRows(const std::vector<int32_t> &prompt, size_t from,
                     const std::vector<float> &rows, size_t vocab, int top,
                     std::vector<TokenLogprob> *out);

/// The bytes a token stands for on its own: its piece with SentencePiece's
/// U+2581 as a space, a byte-fallback piece (<0xNN>) its byte, a special
/// piece (<bos>, <end_of_turn>) its spelling.
std::string tokenBytes(const Tokenizer &tokenizer, int32_t id);

} // namespace pccx::app

#endif
