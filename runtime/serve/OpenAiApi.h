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

/// What both endpoints read from a request.
struct GenerationRequest {
  bool chat = false;
  std::string model;
  /// Chat: the messages. Completions: the prompt text, or token ids.
  std::vector<app::ChatMessage> messages;
  std::string prompt;
  std::vector<int32_t> promptTokens;
  bool promptIsTokens = false;
  /// max_tokens (or max_completion_tokens); absent: the endpoint's default.
  std::optional<int64_t> maxTokens;
  app::SamplingOptions sampling;
  bool hasSeed = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false; ///< stream_options.include_usage
};

/// The server's limits on what a request may ask.
struct RequestLimits {
  int64_t maxTokens = 1024; ///< the largest max_tokens accepted
};

/// Parses a request body. `chat` selects /v1/chat/completions. Returns
/// nullopt and fills `*error` (status 400, naming the field) when the body
/// is not valid JSON, a field has the wrong type or value, or a Refused
/// field of requestFields() has a value that is not neutral.
std::optional<GenerationRequest> parseRequest(const std::string &body,
                                              bool chat,
                                              const RequestLimits &limits,
                                              ApiError *error);

/// OpenAI's finish_reason for how a reply ended: "stop" or "length".
const char *finishReason(app::ReplyEnd end);

struct ResponseIds {
  std::string id;    ///< "chatcmpl-..." or "cmpl-..."
  int64_t created;   ///< Unix seconds
  std::string model; ///< the served model's name
};

/// The complete (not streamed) response.
nlohmann::json completionResponse(const GenerationRequest &request,
                                  const ResponseIds &ids,
                                  const app::Reply &reply);
/// One streamed chunk carrying `text` (chat: the first carries the role);
/// with `finish` set, the closing chunk.
nlohmann::json streamChunk(const GenerationRequest &request,
                           const ResponseIds &ids, const std::string &text,
                           bool first, const char *finish);
/// The usage chunk (stream_options.include_usage): no choices.
nlohmann::json usageChunk(const GenerationRequest &request,
                          const ResponseIds &ids, const app::Reply &reply);

} // namespace pccx::serve

#endif
