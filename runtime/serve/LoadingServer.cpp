//===- LoadingServer.cpp - 503 on the port while the model loads ----------===//

#include "runtime/serve/LoadingServer.h"
#include "hw/support/JsonText.h"

#include <httplib.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace pccx::serve {

struct LoadingServer::Impl {
  std::string model;
  httplib::Server http;
  std::thread thread;
  std::atomic<bool> ended{false}; ///< the accept loop returned
};

LoadingServer::LoadingServer(std::string model)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  httplib::Server &http = impl_->http;
  // Nothing is served: small bodies, short waits, few threads.
  http.set_payload_max_length(4096);
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_max_count(1);
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR only, as the server proper (no port sharing), so that it
  // can bind the same port once this one is stopped.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const std::string model_ = impl_->model;
  http.set_pre_routing_handler(
      [model_](const httplib::Request &req, httplib::Response &res) {
        res.status = 503;
        res.set_header("Retry-After", "1");
        const nlohmann::json body =
            req.path == "/health"
                ? nlohmann::json{{"status", "loading"}, {"model", model_}}
                : nlohmann::json{
                      {"error",
                       {{"message", "the model " + model_ +
                                        " is loading; try again shortly"},
                        {"type", "unavailable_error"},
                        {"param", nullptr},
                        {"code", "model_loading"}}}};
        res.set_content(support::jsonText(body), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      });
}

LoadingServer::~LoadingServer() { stop(); }

int LoadingServer::start(const std::string &host, int port,
                         std::string *error) {
  httplib::Server &http = impl_->http;
  const int bound = port == 0 ? http.bind_to_any_port(host)
                              : (http.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    *error = "cannot listen on " + host + ":" + std::to_string(port) +
             " (address in use, or not an address of this machine)";
    return -1;
  }
  std::atomic<bool> &ended = impl_->ended;
  impl_->thread = std::thread([&http, &ended] {
    http.listen_after_bind();
    ended.store(true);
  });
  // httplib's stop() does nothing until the accept loop runs: wait for it
  // (a stop() before it would leave the thread in accept()).
  while (!http.is_running() && !ended.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return bound;
}

void LoadingServer::stop() {
  if (!impl_->thread.joinable())
    return;
  impl_->http.stop();
  impl_->thread.join();
}

} // namespace pccx::serve
