//===- Choices.h - a generation request's choices ---------------*- C++ -*-===//
//
// What a completions or chat request becomes before it waits for a turn:
// one choice per prompt of a list and per `n`, each with its prompt's ids
// and reply budget, the whole request checked against the server's
// per-request budgets; and what a generated choice becomes in a response
// (its text and log-probabilities).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_CHOICES_H
#define PCCX_RUNTIME_SERVE_CHOICES_H

#include "runtime/serve/Server.h"

namespace pccx::serve {

/// A request's choices in OpenAI's order: prompt p's `n` choices at
/// p * n .. p * n + n - 1.
struct Choices {
  /// Each choice's request (its own prompt only), prompt ids and reply
  /// budget.
  std::vector<GenerationRequest> requests;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> budgets;
  /// Each choice's place among its prompt's n (0 .. n-1).
  std::vector<size_t> copy;
};

/// Splits `request` (its morePrompts moved out) into its choices, encodes
/// each prompt once and checks the whole request's cost, before anything
/// is generated; false with `*error`.
bool expandChoices(Backend &backend, const ServeOptions &options,
                   GenerationRequest &request, Choices *choices,
                   ApiError *error);

/// The seed of a prompt's choice `copy`: `seed` for the first, one of its
/// own for each other (far from the next requests' seeds).
uint64_t choiceSeed(uint64_t seed, size_t copy);

/// Entries of the reply's tokens [from, to) (of those that spell its
/// text), their offsets from `decoder`, which has read the tokens before
/// `from`, plus `base` characters.
std::vector<TokenScore> replyScores(const Backend &backend,
                                    const app::Reply &reply, size_t from,
                                    size_t to, int64_t base,
                                    TextDecoder &decoder);

/// The logprobs field of the request's endpoint.
nlohmann::json logprobsOf(const GenerationRequest &request,
                          const std::vector<TokenScore> &scores);

/// A complete response's choice: the text (after the echoed prompt) and,
/// when asked, its logprobs (the echoed prompt's tokens first).
ChoiceResult choiceResult(Backend &backend, const GenerationRequest &request,
                          const std::vector<int32_t> &prompt,
                          const app::Reply &reply);

/// Chat with active tools: a reply that ended as a whole document becomes
/// its calls (ids `idPrefix` and their place) or its response's text; a
/// reply cut short keeps its text.
void readToolReply(const GenerationRequest &request,
                   const std::string &idPrefix, ChoiceResult *choice);

/// The prefix of choice `i`'s call ids.
std::string toolCallIdPrefix(const ResponseIds &ids, size_t i);

} // namespace pccx::serve

#endif
