//===- OpenAiApi.h - OpenAI-compatible requests and responses ---*- C++ -*-===//
//
// The JSON side of pccx-serve, without HTTP: reading /v1/completions and
// /v1/chat/completions request bodies into generation parameters (with the
// server's limits applied), and writing responses, streamed chunks and
// errors in the shapes OpenAI's API and clients use (docs/serving.md).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_OPENAIAPI_H
#define PCCX_RUNTIME_SERVE_OPENAIAPI_H

#include "runtime/app/Chat.h"
#include "runtime/grammar/JsonSchema.h"
#include "runtime/serve/ToolCalls.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pccx::serve {

/// A request the server refuses: HTTP status and an OpenAI error object.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< empty: null
  std::string code;  ///< empty: null
};

/// {"error": {"message", "type", "param", "code"}}
nlohmann::json errorBody(const ApiError &error);

/// An error of `status` (type server_error from 500 on) with `code`
/// (empty: null) and `message`.
ApiError apiError(int status, const std::string &code,
                  const std::string &message);

/// Characters (code points) of UTF-8 text, the unit of OpenAI's offsets:
/// the bytes that start one.
int64_t characterCount(const std::string &text);

/// What the server does with a request field (docs/serving.md, "Request
/// fields", lists the same table; a unit test keeps the two equal).
enum class FieldHandling {
  Supported, ///< read and honoured
  Refused,   ///< 400 unsupported_parameter naming it, unless a neutral value
  Ignored,   ///< accepted and without effect, by design
};

/// The endpoints a table row applies to (a bit set).
enum FieldEndpoints : unsigned {
  kChatEndpoint = 1,        ///< /v1/chat/completions
  kCompletionsEndpoint = 2, ///< /v1/completions
  kBothEndpoints = kChatEndpoint | kCompletionsEndpoint,
};

/// One request field of OpenAI's chat-completions or completions API (or
/// of llama.cpp's and vLLM's servers). Fields in no row are ignored, as
/// OpenAI's own server ignores unknown fields.
struct RequestField {
  const char *name;
  unsigned endpoints; ///< FieldEndpoints
  FieldHandling handling;
  /// Refused fields: the JSON value still accepted because it asks for
  /// nothing (OpenAI's default); empty: only null or absent. Other rows:
  /// empty.
  const char *neutral;
};

/// The classification of every known request field, one row per field
/// and endpoint set.
const std::vector<RequestField> &requestFields();

const char *fieldHandlingName(FieldHandling handling);

/// A completions prompt: text (BOS is prepended), or token ids.
struct CompletionPrompt {
  std::string text;
  std::vector<int32_t> tokens;
  bool isTokens = false;
};

/// What both endpoints read from a request.
struct GenerationRequest {
  bool chat = false;
  std::string model;
  /// Chat: the messages. Completions: the prompt text, or token ids.
  std::vector<app::ChatMessage> messages;
  std::string prompt;
  std::vector<int32_t> promptTokens;
  bool promptIsTokens = false;
  /// Completions with a list of several prompts: the ones after the first
  /// (above), each answered as its own choice, in order.
  std::vector<CompletionPrompt> morePrompts;
  /// max_tokens (or max_completion_tokens) as asked; absent: the
  /// endpoint's default. The reply's budget clamps it (Choices).
  std::optional<int64_t> maxTokens;
  app::SamplingOptions sampling;
  bool hasSeed = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false; ///< stream_options.include_usage
  /// Log-probabilities of the reply's tokens (chat: logprobs true;
  /// completions: logprobs N), with topLogprobs alternatives each (chat:
  /// top_logprobs; completions: N).
  bool logprobs = false;
  int topLogprobs = 0;
  /// Completions: the prompt comes first in the text (and in logprobs).
  bool echo = false;
  /// Chat's response_format json_object or json_schema: the reply is
  /// decoded under this schema (null: free text).
  std::shared_ptr<const grammar::Schema> schema;
  /// Chat's tools, tool_choice and parallel_tool_calls. When active, the
  /// messages already carry the tools' instructions and `schema` is the
  /// tool-call reply's (ToolCalls.h).
  ToolRequest tools;
  /// `n`: choices generated for each prompt (each from its own seed).
  int64_t n = 1;
};

/// The most alternatives top_logprobs (chat) or logprobs (completions)
/// may ask for.
constexpr int kMaxTopLogprobs = 20;

/// The server's limits on what a request may ask. The per-request budgets
/// are checked before a request waits for a turn, so that nothing one
/// request asks grows beyond them (docs/serving.md, "Limits").
struct RequestLimits {
  /// The most tokens one reply may have: a larger max_tokens is clamped
  /// to it (as to what the context has left after the prompt).
  int64_t maxTokens = 1024;
  /// Completions: the most prompts one request may list (checked while
  /// the body is read, before any is copied or encoded).
  int64_t maxPrompts = 32;
  /// The most tokens one request may need: over its choices, the prompt's
  /// tokens and the reply's budget. Server default: 4 x the context.
  int64_t maxRequestTokens = 0;
  /// The most prompt tokens one request may have scored (echo with
  /// logprobs). Server default: 2 x the context.
  int64_t maxScoredTokens = 0;
  /// The largest `n` (choices per prompt) accepted; each choice counts
  /// against maxRequestTokens as a prompt of a list does.
  int64_t maxChoices = 8;
};

/// What a request gets for the sampling fields it leaves out (pccx-serve
/// --temp, --top-p, ...; shown by GET /props). Without flags: OpenAI's
/// defaults (temperature 1, the other samplers off).
struct RequestDefaults {
  RequestDefaults() { sampling.temperature = 1.0; }
  app::SamplingOptions sampling;
  /// --seed: requests without a seed use sampling.seed; without it each
  /// request draws from a seed of its own.
  bool hasSeed = false;
};

/// Why `defaults` could not be a request's (the same ranges as the
/// request fields), naming the option; empty when valid.
std::string checkRequestDefaults(const RequestDefaults &defaults);

/// Parses a request body. `chat` selects /v1/chat/completions. Returns
/// nullopt and fills `*error` (status 400, naming the field) when the body
/// is not valid JSON, a field has the wrong type or value, or a Refused
/// field of requestFields() has a value that is not neutral.
std::optional<GenerationRequest> parseRequest(const std::string &body,
                                              bool chat,
                                              const RequestLimits &limits,
                                              ApiError *error);
/// The same, the fields a request leaves out taken from `defaults`.
std::optional<GenerationRequest>
parseRequest(const std::string &body, bool chat, const RequestLimits &limits,
             const RequestDefaults &defaults, ApiError *error);

/// OpenAI's finish_reason for how a reply ended: "stop" or "length".
const char *finishReason(app::ReplyEnd end);

/// A token as the logprobs fields write it.
struct TokenScore {
  std::string bytes;             ///< the token's text (app::tokenBytes)
  std::optional<double> logprob; ///< none: nothing predicts it (the first
                                 ///< token of an echoed prompt)
  /// The most likely tokens' texts and log-probabilities, best first.
  std::vector<std::pair<std::string, double>> top;
  int64_t offset = 0; ///< where its text starts in the choice's text, in
                      ///< characters (completions' text_offset)
};

/// A token's text as the "token" fields and keys write it: itself when it
/// is valid UTF-8, else OpenAI's "bytes:\xNN..." of its bytes.
std::string tokenString(const std::string &bytes);

/// Chat's choices[i].logprobs: {"content": [{"token", "logprob", "bytes",
/// "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}.
nlohmann::json chatLogprobs(const std::vector<TokenScore> &tokens);
/// Completions' choices[i].logprobs: {"tokens", "token_logprobs",
/// "top_logprobs" (each {token: logprob} with the token itself among
/// them, or null), "text_offset"}.
nlohmann::json completionLogprobs(const std::vector<TokenScore> &tokens);

struct ResponseIds {
  std::string id;    ///< "chatcmpl-..." or "cmpl-..."
  int64_t created;   ///< Unix seconds
  std::string model; ///< the served model's name
};

/// One choice of a complete response.
struct ChoiceResult {
  const app::Reply *reply = nullptr;
  std::string text; ///< the reply's text (completions' echo: after the prompt)
  /// The choice's logprobs (chatLogprobs, completionLogprobs); null: none.
  nlohmann::json logprobs;
  /// Chat with tools: the reply's calls (message.tool_calls, finish_reason
  /// "tool_calls"; content null); null when it made none.
  nlohmann::json toolCalls;
};

/// The complete (not streamed) response: choice i is choices[i]; usage
/// sums them.
nlohmann::json completionResponse(const GenerationRequest &request,
                                  const ResponseIds &ids,
                                  const std::vector<ChoiceResult> &choices);
/// The token counts of several replies in one (usage over choices).
app::Reply sumReplies(const std::vector<const app::Reply *> &replies);
/// The response of one reply, its text as it is, without logprobs.
nlohmann::json completionResponse(const GenerationRequest &request,
                                  const ResponseIds &ids,
                                  const app::Reply &reply);
/// One streamed chunk of choice `index` carrying `text` (chat: the
/// choice's first carries the role) and the `logprobs` of the tokens behind
/// it (null: none); with `finish` set, the choice's closing chunk.
nlohmann::json streamChunk(const GenerationRequest &request,
                           const ResponseIds &ids, const std::string &text,
                           bool first, const char *finish,
                           const nlohmann::json &logprobs = nullptr,
                           size_t index = 0);
/// A chat chunk of choice `index` carrying `delta` as it is.
nlohmann::json streamDelta(const GenerationRequest &request,
                           const ResponseIds &ids, nlohmann::json delta,
                           const char *finish,
                           const nlohmann::json &logprobs = nullptr,
                           size_t index = 0);
/// The usage chunk (stream_options.include_usage): no choices; `reply`
/// holds every choice's counts (sumReplies).
nlohmann::json usageChunk(const GenerationRequest &request,
                          const ResponseIds &ids, const app::Reply &reply);

} // namespace pccx::serve

#endif
