//===- Server.h - the OpenAI-compatible HTTP server -------------*- C++ -*-===//
//
// The library behind pccx-serve: one model on one session, served over
// HTTP with cpp-httplib. Several connections are read at once; the model
// answers up to `parallel` generation requests at a time (with more than
// one, decoded together by a BatchEngine), the others wait in arrival order
// (a ticket queue); /health, /metrics, /v1/models and the llama.cpp
// routes (InfoRoutes.h) answer at once even while requests are
// generating. The routes, limits and errors: docs/serving.md.
//
// Each connection is read by the server's own stream (Transport.h), which
// enforces the limits while reading: a byte budget for a request's head and
// body whatever its framing (Content-Length, chunked, none), a deadline for
// reading a whole request, an idle timeout between requests, and the stop
// flag. Connection threads outnumber the generation queue, so /health and
// the 503 of a full queue are answered while every slot is busy.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_SERVER_H
#define PCCX_RUNTIME_SERVE_SERVER_H

#include "runtime/app/Chat.h"
#include "runtime/serve/BatchEngine.h"
#include "runtime/serve/OpenAiApi.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pccx::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080; ///< 0: any free port (Server::bind returns it)
  /// The model's name in /v1/models and in responses; requests naming
  /// another model are refused with 404.
  std::string modelName;
  size_t maxBodyBytes = 1 << 20;
  RequestLimits limits;
  /// Generation requests generated at once (pccx-serve --parallel): above
  /// 1, decoded together over that many slots of the session.
  int parallel = 1;
  /// Speculative decoding of each reply (pccx-serve --draft ngram): up to
  /// this many prompt-lookup drafts per step; 0: off. Only with parallel 1.
  int64_t draftTokens = 0;
  /// A chat whose messages and max_tokens do not fit the context drops its
  /// oldest exchanges after the first user message instead of a 400
  /// (pccx-serve --context-shift).
  bool contextShift = false;
  /// Generation requests waiting beyond the ones being served; more are
  /// refused with 503.
  int maxQueue = 16;
  /// Connection threads beyond the maxQueue + 1 that generation requests
  /// may hold: these answer /health, /v1/models and refusals while the
  /// queue is full (pccx-serve --connection-threads).
  int threads = 8;
  /// Connections that may wait for a request without a thread (new ones
  /// before their first byte, kept-alive ones between requests); past it
  /// the one nearest its deadline is closed.
  size_t maxWaitingConnections = 512;
  /// Reading one request (head and body) must end within this many
  /// seconds, counted from the connection's accept for its first request;
  /// a slower client gets 408 and is disconnected.
  int requestTimeoutSeconds = 10;
  /// A kept-alive connection with no new request for this long is closed.
  int idleTimeoutSeconds = 5;
  /// One line per request on stderr: client, method, path, status.
  bool logRequests = true;
  /// Non-empty: every request to the API (needsApiKey: /v1/* and the
  /// llama.cpp routes) must carry "Authorization: Bearer KEY", else 401
  /// (pccx-serve --api-key, --api-key-file).
  std::string apiKey;
  /// Origins whose browsers may call the API ("*": any): preflights are
  /// answered and responses carry Access-Control-Allow-Origin. Empty: no
  /// CORS headers at all.
  std::vector<std::string> corsOrigins;
  /// Serve the chat page at / (pccx-serve --no-webui turns it off; / is
  /// then 404 like any unknown route). The page needs no key to load; its
  /// API calls do.
  bool webUi = true;
  /// What `pccx-objdump --info` prints for the bundle, served as text at
  /// GET /v1/model-card; empty: that route is 404.
  std::string modelCard;
  /// The sampling settings of requests that leave them out (pccx-serve
  /// --temp, --top-p, ..., --seed).
  RequestDefaults defaults;
  /// GET /props: the chat template in use (its text), where it comes from
  /// ("bundle", "file" for --chat-template-file, "built-in"), and the
  /// bundle's file name (without its directory, which is the host's
  /// business).
  std::string chatTemplate, chatTemplateSource, modelPath;
};


/// Whether an Authorization header value is "Bearer KEY" (the scheme in
/// any case) for this `key`. The comparison takes the same time wherever
/// the values differ, so that a client cannot find the key byte by byte.
bool bearerTokenMatches(const std::string &authorization,
                        const std::string &key);

/// Writes `line` to stderr in one write: the server logs from several
/// threads, and the tool from its own, so lines must not interleave.
void logLine(const std::string &line);

/// Decodes a text id by id, each push costing that id (not the text so
/// far): a streamed reply's logprobs offsets stay linear in its length.
class TextDecoder {
public:
  virtual ~TextDecoder() = default;
  /// Adds `id`; returns where its text starts in the decoding, in
  /// characters (an id that completes a character begun by others: where
  /// that character starts).
  virtual int64_t push(int32_t id) = 0;
  /// The decoding of every id pushed so far; call once, after the last.
  virtual std::string finish() = 0;
};

/// What the server asks of the model. The HTTP layer talks to the model
/// only through this, so that it can be tested and fuzzed without a device.
class Backend {
public:
  virtual ~Backend() = default;
  /// Positions of the context (prompt and reply).
  virtual int64_t capacity() const = 0;
  /// The prompt's ids: the chat template over the messages, BOS and the
  /// text, or the request's ids checked against the vocabulary. False with
  /// `*error` (its message and param) when the request cannot be encoded.
  virtual bool promptIds(const GenerationRequest &request,
                         std::vector<int32_t> *ids, ApiError *error) = 0;
  /// A chat's ids with its oldest exchanges (after the system message)
  /// dropped until at most `budget` remain (--context-shift; the shortest
  /// form when none fits). The default renders the conversation again
  /// after each pair it drops; a backend with a tokenizer does it in one
  /// pass.
  virtual bool shiftedPromptIds(const GenerationRequest &request,
                                int64_t budget, std::vector<int32_t> *ids,
                                ApiError *error);
  /// Ids that end a reply besides <end_of_turn>.
  virtual std::set<int32_t> stopTokens() const = 0;
  /// Generates a reply; called from as many threads at once as the
  /// server's `parallel`.
  virtual bool complete(const std::vector<int32_t> &prompt,
                        const app::ReplyOptions &options, app::Reply *reply,
                        std::string *error) = 0;
  /// A constraint for one reply of structured output (response_format):
  /// null with `*error` when the model's vocabulary cannot spell what the
  /// schema may need. The default, for backends without a tokenizer:
  /// refused.
  virtual std::shared_ptr<grammar::JsonConstraint>
  jsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                 std::string *error);
  /// A token's text for log-probabilities (app::tokenBytes). The default,
  /// for backends without a tokenizer: empty.
  virtual std::string tokenText(int32_t) const { return {}; }
  /// A decoder for one text (a reply's, an echoed prompt's), fed id by id.
  /// The default: the tokens' texts one after another.
  virtual std::unique_ptr<TextDecoder> textDecoder() const;
  /// Where each of a text prompt's `ids` (promptIds' encoding of
  /// request.prompt) starts in request.prompt as the client sent it, in
  /// characters: the offsets of an echoed prompt. The default: where each
  /// starts in the decoding of `ids`.
  virtual std::vector<int64_t> promptTextStarts(const GenerationRequest &request,
                                                const std::vector<int32_t> &ids);
  /// The decoding of `ids` (as a reply's text is decoded) and where each
  /// id's text starts in it, in characters (textDecoder()).
  std::string decodeText(const std::vector<int32_t> &ids,
                         std::vector<int64_t> *starts) const;
  /// Readies the backend before the server listens (a batch engine starts
  /// its thread); false with `*error`.
  virtual bool start(std::string *) { return true; }
  /// Token counters for /health and /metrics.
  virtual EngineStats stats() const { return {}; }
  /// POST /tokenize: the ids of `text`, BOS first when `addSpecial`;
  /// false with `*error`. The default, for backends without a tokenizer:
  /// refused.
  virtual bool tokenize(const std::string &text, bool addSpecial,
                        std::vector<int32_t> *ids, std::string *error);
  /// Ids are below this (POST /detokenize refuses others); 0: any id.
  virtual int64_t vocabSize() const { return 0; }
  /// A text longer than this cannot encode to `tokens` ids or fewer (a
  /// bound checked before encoding). The default: none.
  virtual uint64_t maxTextBytes(int64_t tokens) const;
  /// GET /slots: each slot's state; empty when the backend does not know
  /// (the server then shows its own count of busy slots).
  virtual std::vector<SlotState> slotStates() const { return {}; }
};

class Server {
public:
  /// Replies stop at <end_of_turn> and at the model's EOS ids; plain
  /// completions start with its BOS id.
  Server(exec::Session &session, const exec::Model &model,
         const Tokenizer &tokenizer, const app::ChatFormat &format,
         const ServeOptions &options);
  /// Over any backend (tests, fuzzing); `backend` must outlive the server.
  Server(Backend &backend, const ServeOptions &options);
  ~Server();
  /// Answers the bytes a client sent on one connection, without a socket
  /// (the same reading, limits, routing and JSON as a real connection);
  /// returns what the server wrote back. For tests and fuzzing.
  std::string serveBytes(const std::string &input);
  /// Readies the backend (a batch engine starts its thread); bind() does
  /// it, serveBytes() without a socket needs it for --parallel above 1.
  bool start(std::string *error);
  /// Starts the backend and binds the listening socket; returns the port,
  /// or -1 with `*error`.
  int bind(std::string *error);
  /// Serves until stop(); returns false if the server could not run.
  bool run();
  /// Stops accepting, ends the reply being generated (its response is cut
  /// with finish_reason "length") and makes run() return. Thread safe;
  /// not async-signal safe (call it from a thread, not a handler).
  void stop();

private:
  void init();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace pccx::serve

#endif
