//===- LoadingServer.h - 503 on the port while the model loads --*- C++ -*-===//
//
// Loading a bundle reads and checks all of it: seconds from a page cache,
// minutes from a board's SD card. pccx-serve takes its port first and
// answers there, while it loads, what llama-server answers: 503 to
// everything, GET /health {"status": "loading"}, so that a client or a
// load balancer polling /health sees the server coming up instead of a
// refused connection. A busy port is reported before the load, not after.
// When the model is ready it is stopped and the server proper binds the
// same port (docs/serving.md).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_LOADINGSERVER_H
#define PCCX_RUNTIME_SERVE_LOADINGSERVER_H

#include <memory>
#include <string>

namespace pccx::serve {

class LoadingServer {
public:
  /// `model`: the name /health reports.
  explicit LoadingServer(std::string model);
  ~LoadingServer();
  LoadingServer(const LoadingServer &) = delete;
  LoadingServer &operator=(const LoadingServer &) = delete;

  /// Binds `host`:`port` (0: a free port) and answers on it from a thread
  /// of its own. Returns the port, or -1 with `*error` (the same message
  /// the server proper gives).
  int start(const std::string &host, int port, std::string *error);
  /// Stops answering and frees the port (also done on destruction).
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace pccx::serve

#endif
