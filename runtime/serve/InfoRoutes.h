//===- InfoRoutes.h - llama.cpp server's token and info routes --*- C++ -*-===//
//
// The routes of llama.cpp's llama-server that applications call beside
// OpenAI's API, in its request and response shapes: POST /tokenize and
// /detokenize, GET /props and /slots (docs/serving.md, "llama.cpp
// routes"). The bodies are built by functions without HTTP (tests call
// them); addLlamaRoutes registers them on the server.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_INFOROUTES_H
#define PCCX_RUNTIME_SERVE_INFOROUTES_H

#include "runtime/serve/Server.h"

#include <httplib.h>

#include <functional>
#include <optional>

namespace pccx::serve {

/// What the routes read from the server.
struct LlamaRouteContext {
  Backend *backend = nullptr;
  const ServeOptions *options = nullptr;
  /// Requests generating now: /slots' fallback when the backend does not
  /// know its slots.
  std::function<int()> busySlots;
  /// Reads a POST body within --max-body-bytes however it is framed; false
  /// after writing the refusal.
  std::function<bool(const httplib::ContentReader &, std::string *,
                     httplib::Response &)>
      readBody;
};

void addLlamaRoutes(httplib::Server &http, const LlamaRouteContext &context);

/// Whether --api-key guards `path`: the API (/v1/...) and the llama.cpp
/// routes; /health, /metrics and the chat page stay open.
bool needsApiKey(const std::string &path);

/// {"tokens": [ids]}, or with with_pieces [{"id", "piece"}] (the piece a
/// string when it is UTF-8, else its bytes); nullopt with `*error` naming
/// the field.
std::optional<nlohmann::json> tokenizeResponse(Backend &backend,
                                               const RequestLimits &limits,
                                               const std::string &body,
                                               ApiError *error);
/// {"content": text}; nullopt with `*error` naming the field.
std::optional<nlohmann::json> detokenizeResponse(const Backend &backend,
                                                 const RequestLimits &limits,
                                                 const std::string &body,
                                                 ApiError *error);
/// GET /props: the model, its context, the default sampling settings,
/// the chat template in use, the slots, the build.
nlohmann::json propsResponse(const Backend &backend,
                             const ServeOptions &options);
/// GET /slots: one entry per slot (id, n_ctx, is_processing, n_cached);
/// no prompt text. `busy`: the server's count, for a backend that does not
/// know its slots.
nlohmann::json slotsResponse(const Backend &backend,
                             const ServeOptions &options, int busy);

/// The Jinja text of the layout the server renders when the bundle has no
/// Gemma template (what /props shows then).
extern const char kBuiltInChatTemplate[];

} // namespace pccx::serve

#endif
