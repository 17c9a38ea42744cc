//===- Choices.cpp - a generation request's choices -----------------------===//

#include "runtime/serve/Choices.h"

#include <algorithm>

namespace pccx::serve {

using nlohmann::json;

namespace {

/// The prompt's token ids, and the reply budget.
bool prepare(Backend &backend, const ServeOptions &options,
             const GenerationRequest &request, std::vector<int32_t> *ids,
             int64_t *maxTokens, ApiError *error) {
  const int64_t context = backend.capacity();
  // The reply's budget as asked (without max_tokens, chat: up to the
  // context's end; completions: OpenAI's 16), within --max-tokens-limit.
  const int64_t asked = std::min(
      options.limits.maxTokens,
      request.maxTokens ? *request.maxTokens : request.chat ? context : 16);
  // --context-shift: a conversation too long for the context loses its
  // oldest exchanges (the system message stays) until it fits with the
  // reply's budget, at most half the context, so that a long budget does
  // not empty the conversation; it is shifted before anything refuses its
  // length.
  if (options.contextShift && request.chat) {
    // Without max_tokens the reply takes what is left: one token must fit.
    const int64_t reply =
        request.maxTokens
            ? std::max<int64_t>(1, std::min(asked, context / 2))
            : 1;
    if (!backend.shiftedPromptIds(request, context - reply, ids, error))
      return false;
  } else if (!backend.promptIds(request, ids, error)) {
    return false;
  }
  if (ids->empty()) {
    error->message = "the prompt is empty";
    error->param = "prompt";
    return false;
  }
  const int64_t promptTokens = int64_t(ids->size());
  // The prompt fills positions 0..P-1; every reply token but the last is
  // fed back, so a reply of R tokens needs P + R - 1 positions (P without
  // a reply): what is left holds context - P + 1 tokens.
  const int64_t left = context - promptTokens + 1;
  if (promptTokens > context) {
    error->message = "this model's context holds " + std::to_string(context) +
                     " tokens; the prompt has " + std::to_string(promptTokens);
    error->param = request.chat ? "messages" : "prompt";
    error->code = "context_length_exceeded";
    return false;
  }
  // Past what is left, the reply ends with "length" when the context is
  // full, as llama-server's does.
  *maxTokens = std::min(asked, left);
  return true;
}

/// Whether a request's prompts (`prompts`, with reply budgets `budgets`,
/// each generated `n` times) are within the server's per-request budgets:
/// its tokens in all, and the prompt tokens it has scored (echo with
/// logprobs: each a row of the head over the whole vocabulary).
bool withinRequestBudget(const RequestLimits &limits,
                         const GenerationRequest &request,
                         const std::vector<std::vector<int32_t>> &prompts,
                         const std::vector<int64_t> &budgets, int64_t n,
                         ApiError *error) {
  int64_t total = 0, scored = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    total += n * (int64_t(prompts[i].size()) + budgets[i]);
    if (request.echo && request.logprobs)
      scored += n * int64_t(prompts[i].size());
  }
  const char *param = request.chat ? "messages" : "prompt";
  if (total > limits.maxRequestTokens) {
    *error = apiError(400, "request_too_large",
                      "the request needs " + std::to_string(total) +
                          " tokens (prompts and replies of its " +
                          std::to_string(int64_t(prompts.size()) * n) +
                          " choices); this server allows at most " +
                          std::to_string(limits.maxRequestTokens) +
                          " per request (--max-request-tokens)");
    // A single prompt's request is too large because of `n`.
    error->param = prompts.size() == 1 && n > 1 ? "n" : param;
    return false;
  }
  if (scored > limits.maxScoredTokens) {
    *error = apiError(400, "request_too_large",
                      "the request asks to score " + std::to_string(scored) +
                          " prompt tokens (echo with logprobs); this server "
                          "scores at most " +
                          std::to_string(limits.maxScoredTokens) +
                          " per request (--max-scored-tokens)");
    error->param = "echo";
    return false;
  }
  return true;
}

/// A scored token's entry, its alternatives' texts looked up.
TokenScore tokenScore(const Backend &backend, const app::TokenLogprob &score) {
  TokenScore t;
  t.bytes = backend.tokenText(score.token);
  t.logprob = score.logprob;
  for (const auto &[id, logprob] : score.top)
    t.top.push_back({backend.tokenText(id), logprob});
  return t;
}

} // namespace

bool expandChoices(Backend &backend, const ServeOptions &options,
                   GenerationRequest &request, Choices *out,
                   ApiError *error) {
  // Completions with a list of prompts: one choice each. The others are
  // moved out first, so that each choice's copy holds its own prompt only
  // (copying the list into every choice grew with its square).
  std::vector<CompletionPrompt> more = std::move(request.morePrompts);
  request.morePrompts.clear();
  std::vector<GenerationRequest> requests;
  requests.reserve(1 + more.size());
  requests.push_back(request);
  for (CompletionPrompt &p : more) {
    GenerationRequest one = request;
    one.prompt = std::move(p.text);
    one.promptTokens = std::move(p.tokens);
    one.promptIsTokens = p.isTokens;
    requests.push_back(std::move(one));
  }
  more.clear();
  // Every prompt is encoded once, and the whole request's cost checked
  // (each prompt's n choices counted as n prompts), before any copy is made
  // or anything generated.
  std::vector<std::vector<int32_t>> prompts(requests.size());
  std::vector<int64_t> budgets(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    if (!prepare(backend, options, requests[i], &prompts[i], &budgets[i],
                 error))
      return false;
  const int64_t n = std::max<int64_t>(1, request.n);
  if (!withinRequestBudget(options.limits, request, prompts, budgets, n,
                           error))
    return false;
  const size_t count = requests.size() * size_t(n);
  out->requests.reserve(count);
  out->prompts.reserve(count);
  out->budgets.reserve(count);
  for (size_t i = 0; i < requests.size(); ++i)
    for (size_t j = 0; j < size_t(n); ++j) {
      const bool last = j + 1 == size_t(n);
      out->requests.push_back(last ? std::move(requests[i]) : requests[i]);
      out->prompts.push_back(last ? std::move(prompts[i]) : prompts[i]);
      out->budgets.push_back(budgets[i]);
      out->copy.push_back(j);
    }
  return true;
}

uint64_t choiceSeed(uint64_t seed, size_t copy) {
  // The golden ratio's odd multiple: the request seeds that follow (one
  // apart) never meet another choice's.
  return seed + uint64_t(copy) * 0x9E3779B97F4A7C15ull;
}

std::vector<TokenScore> replyScores(const Backend &backend,
                                    const app::Reply &reply, size_t from,
                                    size_t to, int64_t base,
                                    TextDecoder &decoder) {
  std::vector<TokenScore> out;
  for (size_t i = from; i < to; ++i) {
    const int64_t start = decoder.push(reply.tokens[i]);
    if (i >= reply.logprobs.size())
      continue;
    out.push_back(tokenScore(backend, reply.logprobs[i]));
    out.back().offset = base + start;
  }
  return out;
}

json logprobsOf(const GenerationRequest &request,
                const std::vector<TokenScore> &scores) {
  return request.chat ? chatLogprobs(scores) : completionLogprobs(scores);
}

ChoiceResult choiceResult(Backend &backend, const GenerationRequest &request,
                          const std::vector<int32_t> &prompt,
                          const app::Reply &reply) {
  ChoiceResult choice;
  choice.reply = &reply;
  std::vector<TokenScore> scores;
  if (request.echo) {
    // A text prompt is echoed as it was sent, its offsets in that text;
    // token ids, as they decode.
    std::vector<int64_t> starts;
    if (request.promptIsTokens) {
      choice.text = backend.decodeText(prompt, &starts);
    } else {
      choice.text = request.prompt;
      if (request.logprobs)
        starts = backend.promptTextStarts(request, prompt);
    }
    for (size_t i = 0; request.logprobs && i < prompt.size(); ++i) {
      TokenScore t;
      if (i == 0)
        t.bytes = backend.tokenText(prompt[0]);
      else if (i - 1 < reply.promptLogprobs.size())
        t = tokenScore(backend, reply.promptLogprobs[i - 1]);
      t.offset = i < starts.size() ? starts[i] : 0;
      scores.push_back(std::move(t));
    }
  }
  const int64_t base = characterCount(choice.text);
  choice.text += reply.text;
  if (request.logprobs) {
    std::unique_ptr<TextDecoder> decoder = backend.textDecoder();
    std::vector<TokenScore> generated =
        replyScores(backend, reply, 0, reply.textTokens, base, *decoder);
    scores.insert(scores.end(), generated.begin(), generated.end());
    choice.logprobs = logprobsOf(request, scores);
  }
  return choice;
}

void readToolReply(const GenerationRequest &request,
                   const std::string &idPrefix, ChoiceResult *choice) {
  if (!request.tools.active() ||
      std::string(finishReason(choice->reply->end)) != "stop")
    return;
  std::optional<ToolReply> parsed = parseToolReply(choice->text, idPrefix);
  if (!parsed)
    return;
  if (parsed->calls.empty())
    choice->text = parsed->content;
  else
    choice->toolCalls = std::move(parsed->calls);
}

std::string toolCallIdPrefix(const ResponseIds &ids, size_t i) {
  return "call_" + ids.id + "_" + std::to_string(i) + "_";
}

} // namespace pccx::serve
