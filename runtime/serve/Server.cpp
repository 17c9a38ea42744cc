//===- Server.cpp - the OpenAI-compatible HTTP server
//----------------------===//

#include "runtime/serve/Server.h"

#include <httplib.h>

#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace pccx::serve {

using nlohmann::json;

namespace {

void sendJson(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void sendError(httplib::Response &res, const ApiError &error) {
  sendJson(res, error.status, errorBody(error));
}

/// "data: {...}\n\n", one server-sent event.
std::string event(const json &chunk) {
  return "data: " + chunk.dump() + "\n\n";
}

} // namespace

void logLine(const std::string &line) {
  std::fwrite(line.data(), 1, line.size(), stderr);
}

struct Server::Impl {
  Impl(exec::Session &session, const exec::Model &model,
       const app::Tokenizer &tokenizer, const app::ChatFormat &format,
       const ServeOptions &options)
      : session(session), tokenizer(tokenizer), format(format),
        bos(model.bosToken()), vocab(model.vocabSize()), options(options),
        chat(session, tokenizer, format) {
    for (int32_t id : model.eosTokens())
      stopTokens.insert(id);
  }

  exec::Session &session;
  const app::Tokenizer &tokenizer;
  const app::ChatFormat &format;
  int32_t bos;
  int64_t vocab;
  std::set<int32_t> stopTokens;
  ServeOptions options;
  app::ChatSession chat;
  httplib::Server http;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> requests{0};

  // The arrival-order queue: a ticket per generation request.
  std::mutex queueMutex;
  std::condition_variable queueChanged;
  uint64_t nextTicket = 0, serving = 0;
  /// Cancels the reply being generated (set by stop()).
  std::atomic<bool> *current = nullptr;

  /// Holds the model for one request, in arrival order; releases it when
  /// destroyed.
  class Turn {
  public:
    explicit Turn(Impl &impl) : impl_(impl) {}
    ~Turn() {
      std::lock_guard<std::mutex> lock(impl_.queueMutex);
      impl_.current = nullptr;
      ++impl_.serving;
      impl_.queueChanged.notify_all();
    }
    std::atomic<bool> cancel{false};

  private:
    Impl &impl_;
  };

  /// Waits for the request's turn; null (with `*error`) when the queue is
  /// full or the server is stopping.
  std::shared_ptr<Turn> waitForTurn(ApiError *error) {
    std::unique_lock<std::mutex> lock(queueMutex);
    if (nextTicket - serving > uint64_t(options.maxQueue)) {
      error->status = 503;
      error->type = "server_error";
      error->code = "queue_full";
      error->message =
          "the server is busy: " + std::to_string(nextTicket - serving) +
          " requests are ahead of this one (at most " +
          std::to_string(options.maxQueue) + " may wait); retry later";
      return nullptr;
    }
    uint64_t ticket = nextTicket++;
    queueChanged.wait(lock, [&] { return serving == ticket; });
    auto turn = std::make_shared<Turn>(*this);
    if (stopping.load()) {
      error->status = 503;
      error->type = "server_error";
      error->code = "shutting_down";
      error->message = "the server is shutting down";
      lock.unlock(); // the Turn's destructor takes it to pass the model on
      return nullptr;
    }
    current = &turn->cancel;
    return turn;
  }

  void modelRoutes() {
    http.Get("/health",
             [this](const httplib::Request &, httplib::Response &res) {
               uint64_t queued;
               {
                 std::lock_guard<std::mutex> lock(queueMutex);
                 queued = nextTicket - serving;
               }
               sendJson(res, 200,
                        {{"status", "ok"},
                         {"model", options.modelName},
                         {"requests_in_queue", queued},
                         {"context_length", session.capacity()}});
             });
    http.Get("/v1/models", [this](const httplib::Request &,
                                  httplib::Response &res) {
      sendJson(res, 200,
               {{"object", "list"}, {"data", json::array({modelObject()})}});
    });
    http.Get(R"(/v1/models/(.+))",
             [this](const httplib::Request &req, httplib::Response &res) {
               if (req.matches[1] == options.modelName)
                 return sendJson(res, 200, modelObject());
               sendError(res, unknownModel(req.matches[1]));
             });
    for (const char *path : {"/v1/completions", "/v1/chat/completions"}) {
      bool isChat = std::string(path) == "/v1/chat/completions";
      http.Post(path, [this, isChat](const httplib::Request &req,
                                     httplib::Response &res) {
        generate(req, res, isChat);
      });
      http.Get(path, [path](const httplib::Request &, httplib::Response &res) {
        ApiError e;
        e.status = 405;
        e.message = std::string("use POST for ") + path;
        e.code = "method_not_allowed";
        res.set_header("Allow", "POST");
        sendError(res, e);
      });
    }
    // Errors httplib raises itself (no route, body too large, ...) get an
    // OpenAI error body too; bodies the handlers wrote are kept.
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request &req, httplib::Response &res) {
          if (!res.body.empty())
            return httplib::Server::HandlerResponse::Unhandled;
          ApiError e;
          e.status = res.status;
          if (res.status == 404) {
            e.message = "no route " + req.method + " " + req.path +
                        " (see docs/serving.md)";
            e.code = "unknown_url";
          } else if (res.status == 413) {
            e.message = "the request body is larger than " +
                        std::to_string(options.maxBodyBytes) + " bytes";
            e.code = "request_too_large";
          } else {
            e.message = "HTTP " + std::to_string(res.status);
            if (res.status >= 500)
              e.type = "server_error";
          }
          sendError(res, e);
          return httplib::Server::HandlerResponse::Handled;
        }));
  }

  json modelObject() const {
    return {{"id", options.modelName},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "pccx"},
            {"context_length", session.capacity()}};
  }

  ApiError unknownModel(const std::string &name) const {
    ApiError e;
    e.status = 404;
    e.message = "the model '" + name +
                "' does not exist; this server serves '" + options.modelName +
                "'";
    e.param = "model";
    e.code = "model_not_found";
    return e;
  }

  /// The prompt's token ids, and the reply budget.
  bool prepare(const GenerationRequest &request, std::vector<int32_t> *ids,
               int64_t *maxTokens, ApiError *error) {
    std::string why;
    if (request.chat) {
      if (!format.render(request.messages, true, ids, &why)) {
        error->message = why;
        error->param = "messages";
        return false;
      }
    } else if (request.promptIsTokens) {
      for (int32_t id : request.promptTokens)
        if (id >= vocab) {
          error->message = "token id " + std::to_string(id) +
                           " is outside the vocabulary of " +
                           std::to_string(vocab);
          error->param = "prompt";
          return false;
        }
      *ids = request.promptTokens;
    } else {
      if (bos >= 0)
        ids->push_back(bos);
      std::vector<int32_t> text;
      if (!tokenizer.encode(request.prompt, &text, &why)) {
        error->message = why;
        error->param = "prompt";
        return false;
      }
      ids->insert(ids->end(), text.begin(), text.end());
    }
    if (ids->empty()) {
      error->message = "the prompt is empty";
      error->param = "prompt";
      return false;
    }
    const int64_t context = session.capacity();
    const int64_t promptTokens = int64_t(ids->size());
    *maxTokens = request.maxTokens ? *request.maxTokens
                 : request.chat
                     ? std::min(options.limits.maxTokens,
                                std::max<int64_t>(1, context - promptTokens))
                     : std::min<int64_t>(16, options.limits.maxTokens);
    // The prompt fills positions 0..P-1; every reply token but the last is
    // fed back, so P + max_tokens - 1 positions are needed.
    if (promptTokens + *maxTokens - 1 > context) {
      error->message = "this model's context holds " + std::to_string(context) +
                       " tokens; the request needs " +
                       std::to_string(promptTokens + *maxTokens - 1) + " (" +
                       std::to_string(promptTokens) + " in the prompt, " +
                       std::to_string(*maxTokens) +
                       " for the reply, the last one not stored)";
      error->param = request.chat ? "messages" : "prompt";
      error->code = "context_length_exceeded";
      return false;
    }
    return true;
  }

  void generate(const httplib::Request &req, httplib::Response &res,
                bool isChat) {
    ApiError error;
    std::optional<GenerationRequest> request =
        parseRequest(req.body, isChat, options.limits, &error);
    if (!request)
      return sendError(res, error);
    if (!request->model.empty() && request->model != options.modelName)
      return sendError(res, unknownModel(request->model));
    std::vector<int32_t> prompt;
    int64_t maxTokens = 0;
    if (!prepare(*request, &prompt, &maxTokens, &error))
      return sendError(res, error);

    uint64_t number = requests.fetch_add(1);
    ResponseIds ids;
    ids.id = (isChat ? "chatcmpl-" : "cmpl-") + std::to_string(number);
    ids.created = int64_t(std::time(nullptr));
    ids.model = options.modelName;
    app::ReplyOptions reply;
    reply.sampling = request->sampling;
    if (!request->hasSeed) // distinct draws per request, reproducible order
      reply.sampling.seed = number;
    reply.maxTokens = maxTokens;
    reply.stopTokens = stopTokens;
    reply.stopStrings = request->stop;

    std::shared_ptr<Turn> turn = waitForTurn(&error);
    if (!turn)
      return sendError(res, error);
    reply.interrupt = &turn->cancel;

    if (!request->stream) {
      app::Reply result;
      std::string why;
      if (!chat.complete(prompt, reply, &result, &why)) {
        error.status = 500;
        error.type = "server_error";
        error.message = why;
        return sendError(res, error);
      }
      return sendJson(res, 200, completionResponse(*request, ids, result));
    }

    auto shared = std::make_shared<GenerationRequest>(*request);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [this, shared, ids, prompt, reply,
                              turn](size_t, httplib::DataSink &sink) {
          bool first = true;
          app::ReplyOptions options = reply;
          bool gone = false;
          options.onText = [&](const std::string &text) {
            if (gone)
              return;
            std::string data =
                event(streamChunk(*shared, ids, text, first, nullptr));
            first = false;
            // A client that went away ends the reply.
            if (!sink.is_writable() || !sink.write(data.data(), data.size())) {
              gone = true;
              turn->cancel.store(true);
            }
          };
          app::Reply result;
          std::string why;
          bool ok = chat.complete(prompt, options, &result, &why);
          std::string tail;
          if (!ok) {
            ApiError e;
            e.status = 500;
            e.type = "server_error";
            e.message = why;
            tail = event(errorBody(e));
          } else {
            if (first) // no text at all: the role still comes first
              tail += event(streamChunk(*shared, ids, "", true, nullptr));
            tail += event(
                streamChunk(*shared, ids, "", false, finishReason(result.end)));
            if (shared->includeUsage)
              tail += event(usageChunk(*shared, ids, result));
          }
          tail += "data: [DONE]\n\n";
          if (!gone && sink.is_writable())
            sink.write(tail.data(), tail.size());
          sink.done();
          return true;
        });
  }
};

Server::Server(exec::Session &session, const exec::Model &model,
               const app::Tokenizer &tokenizer, const app::ChatFormat &format,
               const ServeOptions &options)
    : impl_(
          std::make_unique<Impl>(session, model, tokenizer, format, options)) {
  Impl &s = *impl_;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second server on the same port would silently share its connections.
  s.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.http.set_payload_max_length(options.maxBodyBytes);
  s.http.set_read_timeout(30, 0);
  s.http.set_write_timeout(30, 0);
  int threads = std::max(2, options.threads);
  s.http.new_task_queue = [threads] {
    return new httplib::ThreadPool(size_t(threads));
  };
  if (options.logRequests)
    s.http.set_logger(
        [](const httplib::Request &req, const httplib::Response &res) {
          logLine("pccx-serve: " + req.remote_addr + " " + req.method + " " +
                  req.path + " " + std::to_string(res.status) + "\n");
        });
  s.modelRoutes();
}

Server::~Server() = default;

int Server::bind(std::string *error) {
  Impl &s = *impl_;
  int port = s.options.port == 0
                 ? s.http.bind_to_any_port(s.options.host)
                 : (s.http.bind_to_port(s.options.host, s.options.port)
                        ? s.options.port
                        : -1);
  if (port < 0)
    *error = "cannot listen on " + s.options.host + ":" +
             std::to_string(s.options.port) +
             " (address in use, or not an address of this machine)";
  return port;
}

bool Server::run() { return impl_->http.listen_after_bind(); }

void Server::stop() {
  Impl &s = *impl_;
  s.stopping.store(true);
  {
    std::lock_guard<std::mutex> lock(s.queueMutex);
    if (s.current)
      s.current->store(true);
    s.queueChanged.notify_all();
  }
  s.http.stop();
}

} // namespace pccx::serve
