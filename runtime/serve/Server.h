//===- Server.h - the OpenAI-compatible HTTP server -------------*- C++ -*-===//
//
// The library behind pccx-serve: one model on one session, served over
// HTTP with cpp-httplib. Several connections are read at once, but the
// model answers one generation request at a time, in arrival order (a
// ticket queue); /health and /v1/models answer at once even while a request
// is generating. The routes, limits and errors: docs/serving.md.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_SERVER_H
#define PCCX_RUNTIME_SERVE_SERVER_H

#include "runtime/app/Chat.h"
#include "runtime/serve/OpenAiApi.h"

#include <memory>
#include <string>

namespace pccx::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080; ///< 0: any free port (Server::bind returns it)
  /// The model's name in /v1/models and in responses; requests naming
  /// another model are refused with 404.
  std::string modelName;
  size_t maxBodyBytes = 1 << 20;
  RequestLimits limits;
  /// Generation requests waiting beyond the one being served; more are
  /// refused with 503.
  int maxQueue = 16;
  /// Connection threads (each request is read by one).
  int threads = 8;
  /// One line per request on stderr: client, method, path, status.
  bool logRequests = true;
};

/// Writes `line` to stderr in one write: the server logs from several
/// threads, and the tool from its own, so lines must not interleave.
void logLine(const std::string &line);

class Server {
public:
  /// Replies stop at <end_of_turn> and at the model's EOS ids; plain
  /// completions start with its BOS id.
  Server(exec::Session &session, const exec::Model &model,
         const app::Tokenizer &tokenizer, const app::ChatFormat &format,
         const ServeOptions &options);
  ~Server();
  /// Binds the listening socket; returns the port, or -1 with `*error`.
  int bind(std::string *error);
  /// Serves until stop(); returns false if the server could not run.
  bool run();
  /// Stops accepting, ends the reply being generated (its response is cut
  /// with finish_reason "length") and makes run() return. Thread safe;
  /// not async-signal safe (call it from a thread, not a handler).
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace pccx::serve

#endif
