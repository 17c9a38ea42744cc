//===- Server.cpp - the OpenAI-compatible HTTP server ---------------------===//
//
// The server's core and its routes: the arrival-order queue of generation
// requests, the watcher of clients that left, and one handler per route
// (the OpenAI shapes in OpenAiApi). The transport is Transport.h's; the
// model behind it, ModelBackend.h's.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Server.h"

#include "hw/support/JsonText.h"
#include "runtime/grammar/TokenMask.h"
#include "runtime/serve/Choices.h"
#include "runtime/serve/InfoRoutes.h"
#include "runtime/serve/ModelBackend.h"
#include "runtime/serve/Transport.h"

#include <httplib.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>

namespace pccx::serve {

// runtime/serve/webui/index.html, compiled in by webui/EmbedFile.cmake.
extern const unsigned char kWebUiPage[];
extern const size_t kWebUiPage_size;

using nlohmann::json;
using support::jsonText;
using support::logSafe;

namespace {

void sendJson(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(jsonText(body), "application/json");
}

void sendError(httplib::Response &res, const ApiError &error) {
  sendJson(res, error.status, errorBody(error));
}

/// When the request this thread serves was routed (for its log line).
thread_local Clock::time_point tlRequestStart;

/// "data: {...}\n\n", one server-sent event.
std::string event(const json &chunk) {
  return "data: " + jsonText(chunk) + "\n\n";
}

/// The response a request without the API key gets: OpenAI's 401.
ApiError unauthorized(bool missing) {
  ApiError e;
  e.status = 401;
  if (missing) {
    e.message = "this server needs an API key: send the header "
                "'Authorization: Bearer KEY'";
  } else {
    e.message = "the API key in the Authorization header is not this "
                "server's";
    e.code = "invalid_api_key";
  }
  return e;
}


} // namespace

void logLine(const std::string &line) {
  std::fwrite(line.data(), 1, line.size(), stderr);
}

bool bearerTokenMatches(const std::string &authorization,
                        const std::string &key) {
  static const char kScheme[] = "bearer ";
  const size_t schemeLength = sizeof kScheme - 1;
  if (key.empty() || authorization.size() < schemeLength ||
      !equalsIgnoringCase(authorization.substr(0, schemeLength), kScheme))
    return false;
  size_t start = authorization.find_first_not_of(' ', schemeLength);
  std::string token =
      start == std::string::npos ? "" : authorization.substr(start);
  // Every byte of the key is compared, whatever the token holds: the time
  // depends on the key's length only.
  unsigned char differ = token.size() != key.size();
  for (size_t i = 0; i < key.size(); ++i)
    differ |= (unsigned char)(i < token.size() ? token[i] : 0) ^
              (unsigned char)key[i];
  return differ == 0;
}

struct Server::Impl {
  /// httplib's server with the connection handling replaced: each
  /// accepted socket is served by a Connection (the limits above).
  class Http : public httplib::Server {
  public:
    explicit Http(Impl &impl) : impl_(impl) {}

    /// Serves requests from `conn` until it closes, breaks, idles, hits a
    /// limit, or the server stops; `served` requests came before on it, and
    /// the first one here must be read by `deadline`. With `room`, a
    /// kept-alive connection with nothing buffered waits there for its next
    /// request instead of holding this thread: returns true, the socket
    /// still open.
    bool serve(Connection &conn, int served, Clock::time_point deadline,
               WaitingRoom *room) {
      tlConnection = &conn;
      bool parked = false;
      for (int n = served; n < kMaxRequestsPerConnection; ++n) {
        if (impl_.stopping.load())
          break;
        if (n > served) {
          if (room && !conn.hasBuffered()) {
            room->park(conn.fd(), n,
                       Clock::now() + std::chrono::seconds(
                                          impl_.options.idleTimeoutSeconds),
                       false);
            parked = true;
            break;
          }
          if (!conn.waitForRequest(
                  Clock::now() +
                  std::chrono::seconds(impl_.options.idleTimeoutSeconds)))
            break;
          deadline = Clock::now() + std::chrono::seconds(
                                        impl_.options.requestTimeoutSeconds);
        } else if (!conn.waitForRequest(deadline)) {
          break;
        }
        // Chunk framing may add a few bytes per body byte; the body itself
        // is counted exactly by the handlers.
        size_t body = impl_.options.maxBodyBytes;
        size_t budget = body > (SIZE_MAX - kMaxHeadBytes) / 8
                            ? SIZE_MAX
                            : kMaxHeadBytes + 8 * body;
        conn.beginRequest(budget, deadline);
        bool closed = false, ok = false;
        try {
          ok = process_request(conn,
                               n + 1 == kMaxRequestsPerConnection ||
                                   impl_.stopping.load(),
                               closed, nullptr);
        } catch (const std::exception &e) {
          // httplib calls the error handler and the logger outside its own
          // protection; nothing a request does may end the process.
          logLine("pccx-serve: error: " + logSafe(e.what()) + "\n");
        } catch (...) {
          logLine("pccx-serve: error: unknown exception\n");
        }
        if (!ok || closed || conn.mustClose())
          break;
      }
      tlConnection = nullptr;
      return parked;
    }

    /// Serves a socket whose next request has begun to arrive (from the
    /// waiting room), on a pool thread.
    void serveSocket(int fd, int served, Clock::time_point deadline) {
      bool parked;
      {
        Connection conn(fd, impl_.stopping);
        parked = serve(conn, served, deadline, impl_.room.get());
      }
      if (!parked) {
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
      }
    }

    /// Stops listening, at most once per listen: httplib's stop() asserts
    /// that the socket is still open, and both stop() and the watcher call
    /// this.
    void stopListener() {
      std::lock_guard<std::mutex> lock(stopMutex_);
      if (is_running() && svr_sock_ != INVALID_SOCKET)
        stop();
    }

    /// A burst of clients fits the kernel's accept queue (httplib listens
    /// with a backlog of 5; the excess would wait for SYN retries).
    void widenBacklog() {
      if (svr_sock_ != INVALID_SOCKET)
        ::listen(svr_sock_, SOMAXCONN);
    }

    /// Lets serveBytes stream responses without a listening socket
    /// (httplib stops streaming when it has none).
    void pretendListening(bool on) {
      if (!is_running())
        svr_sock_ = on ? INT_MAX : INVALID_SOCKET;
    }

  private:
    /// A new connection (on httplib's accept loop): it waits in the room
    /// until its first byte arrives, within the request timeout from now.
    bool process_and_close_socket(socket_t sock) override {
      const Clock::time_point deadline =
          Clock::now() +
          std::chrono::seconds(impl_.options.requestTimeoutSeconds);
      if (impl_.room) {
        impl_.room->park(sock, 0, deadline, true);
        return true;
      }
      serveSocket(sock, 0, deadline);
      return true;
    }
    Impl &impl_;
    std::mutex stopMutex_;
  };

  Impl(Backend &backend, const ServeOptions &options)
      : backend(backend), options(withDefaultBudgets(options, backend)),
        stopTokens(backend.stopTokens()), http(*this) {}

  /// The per-request budgets left at 0 follow the context.
  static ServeOptions withDefaultBudgets(ServeOptions options,
                                         const Backend &backend) {
    const int64_t context = std::max<int64_t>(1, backend.capacity());
    RequestLimits &limits = options.limits;
    if (limits.maxRequestTokens <= 0)
      limits.maxRequestTokens = 4 * context;
    if (limits.maxScoredTokens <= 0)
      limits.maxScoredTokens = 2 * context;
    return options;
  }

  std::unique_ptr<Backend> owned;
  Backend &backend;
  ServeOptions options;
  std::set<int32_t> stopTokens;
  Http http;
  /// While run() listens: the threads that serve requests, and the room
  /// where idle connections wait for theirs.
  std::unique_ptr<httplib::ThreadPool> pool;
  std::unique_ptr<WaitingRoom> room;
  std::atomic<bool> stopping{false}, listenEnded{false};
  std::atomic<uint64_t> requests{0};

  // The arrival-order queue: a ticket per generation request; tickets are
  // admitted in order while fewer than options.parallel generate.
  std::mutex queueMutex;
  std::condition_variable queueChanged;
  uint64_t nextTicket = 0, admitted = 0;
  int active = 0;

  /// Holds one of the model's `parallel` places for one request; gives it
  /// back when destroyed.
  class Turn {
  public:
    Turn(Impl &impl, std::function<bool()> gone)
        : gone(std::move(gone)), impl_(impl) {}
    ~Turn() {
      std::lock_guard<std::mutex> lock(impl_.queueMutex);
      impl_.turns.erase(this);
      --impl_.active;
      impl_.queueChanged.notify_all();
    }
    /// Ends the reply (set by stop(), or by the watcher when `gone` says
    /// its client left).
    std::atomic<bool> cancel{false};
    std::function<bool()> gone;

  private:
    Impl &impl_;
  };
  std::set<Turn *> turns; ///< generating now

  /// Waits for the request's turn; null (with `*error`) when the queue is
  /// full or the server is stopping. `gone`, when set, is polled while the
  /// reply generates: true ends it (a client that left).
  /// `admittedBefore`: the request had a turn already (a list's next
  /// prompt), and is not refused for a full queue.
  std::shared_ptr<Turn> waitForTurn(ApiError *error, std::function<bool()> gone,
                                    bool admittedBefore) {
    std::unique_lock<std::mutex> lock(queueMutex);
    if (stopping.load()) {
      *error = apiError(503, "shutting_down", "the server is shutting down");
      return nullptr;
    }
    const uint64_t parallel = uint64_t(std::max(1, options.parallel));
    const uint64_t ahead = (nextTicket - admitted) + uint64_t(active);
    if (!admittedBefore && ahead > uint64_t(options.maxQueue) + parallel - 1) {
      *error = apiError(
          503, "queue_full",
          "the server is busy: " + std::to_string(ahead) +
              " requests are ahead of this one (" + std::to_string(parallel) +
              " generating, at most " + std::to_string(options.maxQueue) +
              " may wait); retry later");
      return nullptr;
    }
    const uint64_t ticket = nextTicket++;
    queueChanged.wait(lock, [&] {
      return stopping.load() ||
             (admitted == ticket && uint64_t(active) < parallel);
    });
    if (stopping.load()) {
      *error = apiError(503, "shutting_down", "the server is shutting down");
      return nullptr;
    }
    ++admitted;
    ++active;
    auto turn = std::make_shared<Turn>(*this, std::move(gone));
    turns.insert(turn.get());
    queueChanged.notify_all(); // the next ticket may be admitted too
    return turn;
  }

  /// While run() listens: every 100 ms, ends the replies whose client left;
  /// once stopping, stops the listener again until it has ended (a stop()
  /// that came before httplib began listening would otherwise be lost).
  void watchClients() {
    std::unique_lock<std::mutex> lock(queueMutex);
    while (!listenEnded.load()) {
      if (stopping.load()) {
        lock.unlock();
        http.stopListener();
        lock.lock();
      } else {
        for (Turn *turn : turns)
          if (turn->gone && turn->gone())
            turn->cancel.store(true);
      }
      queueChanged.wait_for(lock, std::chrono::milliseconds(kSliceMs));
    }
  }

  /// Slots, queue and token counters (/health, /metrics).
  json status() {
    uint64_t waiting;
    int generating;
    {
      std::lock_guard<std::mutex> lock(queueMutex);
      waiting = nextTicket - admitted;
      generating = active;
    }
    const EngineStats e = backend.stats();
    return {{"slots", std::max(1, options.parallel)},
            {"slots_busy", generating},
            {"requests_waiting", waiting},
            {"generated_tokens", e.generatedTokens},
            {"prompt_tokens", e.promptTokens},
            {"reused_prompt_tokens", e.reusedTokens},
            {"decode_steps", e.decodeSteps},
            {"sequences_per_step",
             e.decodeSteps ? double(e.stepRows) / double(e.decodeSteps) : 0.0},
            {"busy_seconds", e.busySeconds},
            {"drafted_tokens", e.draftedTokens},
            {"accepted_draft_tokens", e.acceptedTokens},
            {"tokens_per_second",
             e.busySeconds > 0 ? double(e.generatedTokens) / e.busySeconds
                               : 0.0}};
  }

  /// Registers the routes and httplib's hooks; each is a member below.
  void modelRoutes() {
    using Request = httplib::Request;
    using Response = httplib::Response;
    http.Get("/health", [this](const Request &req, Response &res) {
      handleHealth(req, res);
    });
    http.Get("/metrics", [this](const Request &req, Response &res) {
      handleMetrics(req, res);
    });
    if (options.webUi)
      http.Get("/", handleWebUi);
    if (!options.modelCard.empty())
      http.Get("/v1/model-card", [this](const Request &, Response &res) {
        res.status = 200;
        res.set_content(options.modelCard, "text/plain; charset=utf-8");
      });
    http.Get("/v1/models", [this](const Request &req, Response &res) {
      handleModels(req, res);
    });
    http.Get(R"(/v1/models/(.+))", [this](const Request &req, Response &res) {
      handleModel(req, res);
    });
    LlamaRouteContext llama;
    llama.backend = &backend;
    llama.options = &options;
    llama.busySlots = [this] {
      std::lock_guard<std::mutex> lock(queueMutex);
      return active;
    };
    llama.readBody = [this](const httplib::ContentReader &reader,
                            std::string *body, Response &res) {
      return readBody(reader, body, res);
    };
    addLlamaRoutes(http, llama);
    for (const char *path : {"/v1/completions", "/v1/chat/completions"}) {
      bool isChat = std::string(path) == "/v1/chat/completions";
      http.Post(path, [this, isChat](const Request &req, Response &res,
                                     const httplib::ContentReader &reader) {
        handleGeneration(req, res, reader, isChat);
      });
      http.Get(path, [path](const Request &, Response &res) {
        refuseGet(path, res);
      });
    }
    http.set_pre_routing_handler([this](const Request &req, Response &res) {
      return beforeRouting(req, res);
    });
    http.set_post_routing_handler(
        [this](const Request &req, Response &res) { afterRouting(req, res); });
    http.set_exception_handler(handleException);
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const Request &req, Response &res) {
          return handleError(req, res);
        }));
  }

  void handleHealth(const httplib::Request &, httplib::Response &res) {
    json s = status();
    sendJson(res, 200,
             {{"status", "ok"},
              {"model", options.modelName},
              {"requests_in_queue", s["requests_waiting"].get<uint64_t>() +
                                        s["slots_busy"].get<uint64_t>()},
              {"slots", s["slots"]},
              {"slots_busy", s["slots_busy"]},
              {"tokens_per_second", s["tokens_per_second"]},
              {"context_length", backend.capacity()}});
  }

  /// The chat page. It loads nothing from elsewhere and may talk only to
  /// this server, which its Content-Security-Policy enforces; no other site
  /// may frame it (the page holds the API key).
  static void handleWebUi(const httplib::Request &, httplib::Response &res) {
    res.status = 200;
    res.set_content(reinterpret_cast<const char *>(kWebUiPage),
                    kWebUiPage_size, "text/html; charset=utf-8");
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; "
                   "style-src 'unsafe-inline'; connect-src 'self'; "
                   "img-src data:; base-uri 'none'; form-action 'none'; "
                   "frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-cache");
  }

  /// Prometheus' text format: counters and gauges of the same figures.
  void handleMetrics(const httplib::Request &, httplib::Response &res) {
    json s = status();
    std::string text;
    auto metric = [&](const char *name, const char *type, const char *help,
                      const json &value) {
      text += std::string("# HELP pccx_") + name + " " + help +
              "\n# TYPE pccx_" + name + " " + type + "\npccx_" + name + " " +
              value.dump() + "\n";
    };
    metric("slots", "gauge", "Sequences generated at once.", s["slots"]);
    metric("slots_busy", "gauge", "Requests generating now.", s["slots_busy"]);
    metric("requests_waiting", "gauge", "Requests waiting for a slot.",
           s["requests_waiting"]);
    metric("generated_tokens_total", "counter", "Tokens generated.",
           s["generated_tokens"]);
    metric("prompt_tokens_total", "counter", "Prompt tokens consumed.",
           s["prompt_tokens"]);
    metric("reused_prompt_tokens_total", "counter",
           "Prompt tokens found in a slot's KV cache.",
           s["reused_prompt_tokens"]);
    metric("decode_steps_total", "counter",
           "Decode steps (passes over the weights).", s["decode_steps"]);
    metric("busy_seconds_total", "counter", "Seconds spent generating.",
           s["busy_seconds"]);
    metric("draft_tokens_total", "counter",
           "Tokens drafted by speculative decoding (--draft).",
           s["drafted_tokens"]);
    metric("draft_accepted_tokens_total", "counter", "Drafted tokens accepted.",
           s["accepted_draft_tokens"]);
    metric("tokens_per_second", "gauge",
           "Generated tokens per busy second, all sequences.",
           s["tokens_per_second"]);
    res.status = 200;
    res.set_content(text, "text/plain; version=0.0.4");
  }

  void handleModels(const httplib::Request &, httplib::Response &res) {
    sendJson(res, 200,
             {{"object", "list"}, {"data", json::array({modelObject()})}});
  }

  void handleModel(const httplib::Request &req, httplib::Response &res) {
    if (req.matches[1] == options.modelName)
      return sendJson(res, 200, modelObject());
    sendError(res, unknownModel(req.matches[1]));
  }

  /// POST /v1/completions and /v1/chat/completions.
  void handleGeneration(const httplib::Request &req, httplib::Response &res,
                        const httplib::ContentReader &reader, bool isChat) {
    std::string body;
    if (readBody(reader, &body, res))
      generate(req, body, res, isChat);
  }

  /// GET on a generation route.
  static void refuseGet(const char *path, httplib::Response &res) {
    ApiError e = apiError(405, "method_not_allowed",
                          std::string("use POST for ") + path);
    res.set_header("Allow", "POST");
    sendError(res, e);
  }

  /// Before any body byte is read: CORS preflights, the API key, then the
  /// framing.
  httplib::Server::HandlerResponse beforeRouting(const httplib::Request &req,
                                                 httplib::Response &res) {
    tlRequestStart = Clock::now();
    if (Connection *conn = tlConnection; conn && conn->headHasNul()) {
      conn->closeAfterResponse();
      res.set_header("Connection", "close");
      sendError(res, apiError(400, "invalid_header",
                              "a header holds a NUL byte, which HTTP "
                              "does not allow in a field"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "OPTIONS" && !allowedOrigin(req).empty() &&
        req.has_header("Access-Control-Request-Method")) {
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      res.set_header("Access-Control-Allow-Headers",
                     "Authorization, Content-Type");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options.apiKey.empty() && needsApiKey(req.path) &&
        !(req.get_header_value_count("Authorization") == 1 &&
          bearerTokenMatches(req.get_header_value("Authorization"),
                             options.apiKey))) {
      if (tlConnection) // the body is left unread
        tlConnection->closeAfterResponse();
      res.set_header("Connection", "close");
      res.set_header("WWW-Authenticate", "Bearer");
      sendError(res, unauthorized(!req.has_header("Authorization")));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (std::optional<ApiError> e = framingError(req, options.maxBodyBytes)) {
      if (tlConnection) // the body is left unread
        tlConnection->closeAfterResponse();
      res.set_header("Connection", "close");
      sendError(res, *e);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  /// Every response to an allowed origin says so: httplib calls this before
  /// writing the headers of any response, errors and streams included.
  void afterRouting(const httplib::Request &req, httplib::Response &res) {
    std::string origin = allowedOrigin(req);
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      if (origin != "*") // the answer depends on the Origin
        res.set_header("Vary", "Origin");
    }
  }

  /// An exception in a handler is a 500 whose text goes to the log, not to
  /// the client (httplib's default puts it in a header).
  static void handleException(const httplib::Request &, httplib::Response &res,
                              std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception &e) {
      what = e.what();
    } catch (...) {
    }
    logLine("pccx-serve: error: " + logSafe(what) + "\n");
    sendError(res, apiError(500, "internal_error",
                            "the server failed to handle the request"));
  }

  /// Errors httplib raises itself (no route, a body it could not read, ...)
  /// get an OpenAI error body too; bodies the handlers wrote are kept. This
  /// runs outside httplib's exception protection.
  httplib::Server::HandlerResponse handleError(const httplib::Request &req,
                                               httplib::Response &res) {
    if (!res.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    if (tlConnection && tlConnection->overLimit())
      res.status = 413;
    else if (tlConnection && tlConnection->timedOut())
      res.status = 408;
    ApiError e;
    e.status = res.status;
    if (res.status == 404) {
      e.message =
          "no route " + req.method + " " + req.path + " (see docs/serving.md)";
      e.code = "unknown_url";
    } else {
      e = statusError(res.status);
    }
    sendError(res, e);
    return httplib::Server::HandlerResponse::Handled;
  }

  /// The Access-Control-Allow-Origin value for the request's Origin, or
  /// empty when it has none or it is not one of --cors-origin.
  std::string allowedOrigin(const httplib::Request &req) const {
    if (options.corsOrigins.empty() || !req.has_header("Origin"))
      return "";
    std::string origin = req.get_header_value("Origin");
    for (const std::string &allowed : options.corsOrigins)
      if (allowed == "*" || allowed == origin)
        return allowed;
    return "";
  }

  ApiError statusError(int status) const {
    switch (status) {
    case 408:
      return apiError(408, "request_timeout",
                      "the request was not received within " +
                          std::to_string(options.requestTimeoutSeconds) +
                          " seconds");
    case 413:
      return apiError(413, "request_too_large",
                      "the request body is larger than " +
                          std::to_string(options.maxBodyBytes) + " bytes");
    case 414:
      return apiError(414, "uri_too_long", "the request's URL is too long");
    default:
      return apiError(status, "", "HTTP " + std::to_string(status));
    }
  }

  /// Reads a generation request's body, counting its bytes whatever the
  /// framing; false after writing the refusal.
  bool readBody(const httplib::ContentReader &reader, std::string *body,
                httplib::Response &res) {
    bool tooLarge = false;
    bool ok = reader([&](const char *data, size_t n) {
      if (n > options.maxBodyBytes - body->size()) {
        tooLarge = true;
        return false;
      }
      body->append(data, n);
      return true;
    });
    Connection *conn = tlConnection;
    if (conn)
      conn->endRequest();
    if (ok && !tooLarge)
      return true;
    if (conn) // the rest of the body is unread
      conn->closeAfterResponse();
    res.set_header("Connection", "close");
    int status = tooLarge || (conn && conn->overLimit()) ? 413
                 : conn && conn->timedOut()              ? 408
                                                         : 400;
    ApiError e = status == 400
                     ? apiError(400, "invalid_body",
                                "the request body could not be read (broken "
                                "chunked framing, or the connection closed)")
                     : statusError(status);
    sendError(res, e);
    return false;
  }

  json modelObject() const {
    return {{"id", options.modelName},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "pccx"},
            {"context_length", backend.capacity()}};
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

  /// The error of a reply the backend could not complete: a schema whose
  /// token masks ran past their work budget is the request's fault (400,
  /// as the other schema refusals); anything else, the server's (500).
  static ApiError replyFailure(const GenerationRequest &request,
                               const app::ReplyOptions &options,
                               const std::string &why,
                               const std::atomic<bool> &cancelled) {
    if (options.constraint && !options.constraint->error().empty() &&
        !cancelled.load()) {
      ApiError failure = apiError(400, "schema_too_complex", why);
      failure.param = schemaParam(request);
      return failure;
    }
    return apiError(500, "", why);
  }

  /// The field a request's schema came from: its tools' when tool calls
  /// are decoded, else response_format.
  static const char *schemaParam(const GenerationRequest &request) {
    return request.tools.active() ? "tools" : "response_format";
  }

  /// A constraint for one reply under the request's schema; null with
  /// `*error` when the vocabulary cannot spell what the schema may need.
  std::shared_ptr<grammar::JsonConstraint>
  constraintFor(const GenerationRequest &request, ApiError *error) {
    std::string why;
    auto constraint = backend.jsonConstraint(request.schema, &why);
    if (!constraint) {
      *error = apiError(400, "invalid_value", why);
      error->param = schemaParam(request);
    }
    return constraint;
  }

  /// Choice i's reply options (`options` holds the request's): its budget,
  /// its seed, and after the first a constraint of its own (decoding
  /// advances one). False with `*error`.
  bool forChoice(const GenerationRequest &request, const Choices &choices,
                 size_t i, app::ReplyOptions *options, ApiError *error) {
    options->maxTokens = choices.budgets[i];
    options->sampling.seed =
        choiceSeed(options->sampling.seed, choices.copy[i]);
    return i == 0 || !request.schema ||
           (options->constraint = constraintFor(request, error));
  }

  void generate(const httplib::Request &, const std::string &body,
                httplib::Response &res, bool isChat) {
    ApiError error;
    std::optional<GenerationRequest> request =
        parseRequest(body, isChat, options.limits, options.defaults, &error);
    if (!request)
      return sendError(res, error);
    if (!request->model.empty() && request->model != options.modelName)
      return sendError(res, unknownModel(request->model));
    auto choices = std::make_shared<Choices>();
    if (!expandChoices(backend, options, *request, choices.get(), &error))
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
    reply.draftTokens = options.draftTokens;
    reply.stopTokens = stopTokens;
    reply.stopStrings = request->stop;
    reply.topLogprobs = request->logprobs ? request->topLogprobs : -1;
    reply.scorePrompt = request->echo && request->logprobs;
    // Structured output: refused before the request waits when the
    // vocabulary cannot spell what the schema may need.
    if (request->schema && !(reply.constraint = constraintFor(*request, &error)))
      return sendError(res, error);
    if (!request->stream)
      return completeChoices(*request, *choices, ids, reply, res);
    streamChoices(std::make_shared<const GenerationRequest>(*request), choices,
                  ids, reply, res);
  }

  /// The complete (not streamed) response of every choice.
  void completeChoices(const GenerationRequest &request, const Choices &choices,
                       const ResponseIds &ids, const app::ReplyOptions &reply,
                       httplib::Response &res) {
    // A complete reply's client that leaves is noticed by watching it (a
    // streamed one's, when a write fails).
    std::function<bool()> gone;
    if (Connection *conn = tlConnection)
      gone = [conn] { return conn->clientGone(); };
    ApiError error;
    std::vector<app::Reply> results(choices.prompts.size());
    std::vector<ChoiceResult> out;
    for (size_t i = 0; i < results.size(); ++i) {
      // Each choice waits for a turn of its own: the requests that came
      // meanwhile go in between a long list's prompts, which cannot hold
      // a slot for all of them.
      std::shared_ptr<Turn> turn =
          waitForTurn(&error, gone, /*admittedBefore=*/i > 0);
      if (!turn)
        return sendError(res, error);
      app::ReplyOptions options = reply;
      if (!forChoice(request, choices, i, &options, &error))
        return sendError(res, error);
      options.interrupt = &turn->cancel;
      std::string why;
      if (!backend.complete(choices.prompts[i], options, &results[i], &why))
        return sendError(res, replyFailure(request, options, why, turn->cancel));
      logReply(ids, i, results[i]);
      out.push_back(choiceResult(backend, choices.requests[i],
                                 choices.prompts[i], results[i]));
      readToolReply(request, toolCallIdPrefix(ids, i), &out.back());
      // A client that left ends the rest too.
      if (turn->cancel.load())
        break;
    }
    sendJson(res, 200, completionResponse(request, ids, out));
  }

  /// Server-sent events of every choice, one after another, each waiting
  /// for a turn of its own; the first turn is taken before the response
  /// starts, so that a full queue is still a 503.
  void streamChoices(std::shared_ptr<const GenerationRequest> request,
                     std::shared_ptr<const Choices> choices,
                     const ResponseIds &ids, const app::ReplyOptions &reply,
                     httplib::Response &res) {
    ApiError error;
    std::shared_ptr<Turn> turn =
        waitForTurn(&error, nullptr, /*admittedBefore=*/false);
    if (!turn)
      return sendError(res, error);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [this, request, choices, ids, reply,
                              turn](size_t, httplib::DataSink &sink) mutable {
          bool gone = false;
          auto write = [&](const std::string &data) {
            if (!gone &&
                (!sink.is_writable() || !sink.write(data.data(), data.size())))
              gone = true; // a client that went away ends the reply
          };
          std::vector<app::Reply> results(choices->prompts.size());
          std::string tail;
          for (size_t i = 0; i < results.size() && !gone && tail.empty();
               ++i) {
            ApiError error;
            if (i > 0) {
              turn.reset();
              turn = waitForTurn(&error, nullptr, /*admittedBefore=*/true);
            }
            app::ReplyOptions options = reply;
            if (!turn || !forChoice(*request, *choices, i, &options, &error))
              tail = event(errorBody(error));
            else
              tail = streamChoice(*request, *choices, ids, i, options, *turn,
                                  results[i], write, gone);
          }
          if (tail.empty() && request->includeUsage) {
            std::vector<const app::Reply *> all;
            for (const app::Reply &r : results)
              all.push_back(&r);
            tail = event(usageChunk(*request, ids, sumReplies(all)));
          }
          tail += "data: [DONE]\n\n";
          write(tail);
          turn.reset();
          sink.done();
          return true;
        });
  }

  /// One line per generated choice (unless --quiet): its prompt and reply
  /// tokens, their times and the reply's rate, and how it ended.
  void logReply(const ResponseIds &ids, size_t i,
                const app::Reply &reply) const {
    if (!options.logRequests)
      return;
    const int64_t tokens = int64_t(reply.tokens.size());
    char line[256];
    std::snprintf(line, sizeof line,
                  "pccx-serve: %s choice %zu: prompt %lld tokens (%lld "
                  "cached) in %.0f ms, reply %lld tokens in %.0f ms (%.2f "
                  "tokens/s), %s\n",
                  ids.id.c_str(), i, (long long)reply.promptTokens,
                  (long long)reply.reusedTokens, reply.promptSeconds * 1e3,
                  (long long)tokens, reply.replySeconds * 1e3,
                  reply.replySeconds > 0 ? double(tokens) / reply.replySeconds
                                         : 0.0,
                  app::replyEndName(reply.end));
    logLine(line);
  }

  /// A streamed tool-call reply (choice i): one chunk with the role and
  /// the calls (each with its index, id and whole arguments) or the
  /// response's text, then the closing chunk.
  static std::string toolReplyEvents(const GenerationRequest &request,
                                     const ResponseIds &ids, size_t i,
                                     const app::Reply &result,
                                     const json &logprobs) {
    ChoiceResult choice;
    choice.reply = &result;
    choice.text = result.text;
    readToolReply(request, toolCallIdPrefix(ids, i), &choice);
    json delta = {{"role", "assistant"}};
    const char *finish = finishReason(result.end);
    if (choice.toolCalls.is_null()) {
      delta["content"] = choice.text;
    } else {
      json calls = choice.toolCalls;
      for (size_t k = 0; k < calls.size(); ++k)
        calls[k]["index"] = k;
      delta["tool_calls"] = std::move(calls);
      finish = "tool_calls";
    }
    return event(streamDelta(request, ids, std::move(delta), nullptr,
                             logprobs, i)) +
           event(streamDelta(request, ids, json::object(), finish, nullptr,
                             i));
  }

  /// Streams choice i (its chunks carry index i) up to its closing chunk;
  /// returns the error event when its reply fails, else "".
  std::string streamChoice(const GenerationRequest &request,
                           const Choices &choices, const ResponseIds &ids,
                           size_t i, app::ReplyOptions options, Turn &turn,
                           app::Reply &result,
                           const std::function<void(const std::string &)> &write,
                           const bool &gone) {
    bool first = true;
    // Tokens whose entries went out: each chunk carries those of the
    // tokens behind its text (Reply::textTokens), their offsets from one
    // decoder that reads each token once.
    size_t scored = 0;
    std::unique_ptr<TextDecoder> decoder = backend.textDecoder();
    auto scores = [&]() -> json {
      if (!request.logprobs)
        return nullptr;
      const size_t to = result.textTokens;
      std::vector<TokenScore> entries =
          replyScores(backend, result, scored, to, 0, *decoder);
      scored = to;
      return logprobsOf(request, entries);
    };
    options.interrupt = &turn.cancel;
    // A tool-call reply is known only when its document is whole: it goes
    // out in one chunk at the end.
    const bool tools = request.tools.active();
    options.onText = [&](const std::string &text) {
      if (gone || tools)
        return;
      write(event(streamChunk(request, ids, text, first, nullptr, scores(), i)));
      first = false;
      if (gone)
        turn.cancel.store(true);
    };
    std::string why;
    if (!backend.complete(choices.prompts[i], options, &result, &why))
      return event(errorBody(replyFailure(request, options, why, turn.cancel)));
    logReply(ids, i, result);
    if (tools) {
      write(toolReplyEvents(request, ids, i, result, scores()));
      return "";
    }
    // Tokens that added no text at the end (and, with no text at all, the
    // role, which comes first) still get a chunk.
    std::string tail;
    if (first || (request.logprobs && scored < result.textTokens))
      tail += event(streamChunk(request, ids, "", first, nullptr, scores(), i));
    tail += event(streamChunk(request, ids, "", false,
                              finishReason(result.end), nullptr, i));
    write(tail);
    return "";
  }
};

Server::Server(exec::Session &session, const exec::Model &model,
               const Tokenizer &tokenizer, const app::ChatFormat &format,
               const ServeOptions &options) {
  std::unique_ptr<Backend> backend =
      makeModelBackend(session, model, tokenizer, format, options.parallel);
  impl_ = std::make_unique<Impl>(*backend, options);
  impl_->owned = std::move(backend);
  init();
}

Server::Server(Backend &backend, const ServeOptions &options)
    : impl_(std::make_unique<Impl>(backend, options)) {
  init();
}

void Server::init() {
  Impl &s = *impl_;
  const ServeOptions &options = s.options;
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second server on the same port would silently share its connections.
  s.http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.http.set_payload_max_length(options.maxBodyBytes);
  // Generation requests hold at most maxQueue + parallel threads (parallel
  // generating, the others waiting their turn); the rest answer everything
  // else.
  // Sockets are served by Impl::pool (run()); httplib's accept loop only
  // hands them to the waiting room.
  s.http.new_task_queue = [] { return new InlineQueue; };
  if (options.logRequests)
    s.http.set_logger(
        [](const httplib::Request &req, const httplib::Response &res) {
          // From routing to the response's last byte (a stream's included).
          const long long ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(
                  Clock::now() - tlRequestStart)
                  .count();
          logLine("pccx-serve: " + logSafe(req.remote_addr) + " " +
                  logSafe(req.method) + " " + logSafe(req.path) + " " +
                  std::to_string(res.status) + " " + std::to_string(ms) +
                  " ms\n");
        });
  s.modelRoutes();
}

Server::~Server() = default;

bool Server::start(std::string *error) { return impl_->backend.start(error); }

int Server::bind(std::string *error) {
  Impl &s = *impl_;
  if (!start(error))
    return -1;
  int port = s.options.port == 0
                 ? s.http.bind_to_any_port(s.options.host)
                 : (s.http.bind_to_port(s.options.host, s.options.port)
                        ? s.options.port
                        : -1);
  if (port >= 0)
    s.http.widenBacklog();
  if (port < 0)
    *error = "cannot listen on " + s.options.host + ":" +
             std::to_string(s.options.port) +
             " (address in use, or not an address of this machine)";
  return port;
}

bool Server::run() {
  Impl &s = *impl_;
  s.listenEnded.store(false);
  std::thread watcher([&s] { s.watchClients(); });
  const size_t threads = size_t(std::max(0, s.options.maxQueue)) +
                         size_t(std::max(1, s.options.parallel)) +
                         size_t(std::max(2, s.options.threads));
  s.pool = std::make_unique<httplib::ThreadPool>(threads);
  httplib::ThreadPool *pool = s.pool.get();
  Impl::Http *http = &s.http;
  s.room = std::make_unique<WaitingRoom>(
      std::max<size_t>(1, s.options.maxWaitingConnections),
      s.options.requestTimeoutSeconds,
      [pool, http](int fd, int served, Clock::time_point deadline) {
        pool->enqueue(
            [http, fd, served, deadline] { http->serveSocket(fd, served, deadline); });
      });
  bool ok = s.http.listen_after_bind();
  {
    std::lock_guard<std::mutex> lock(s.queueMutex);
    s.stopping.store(true);
    s.listenEnded.store(true);
    s.queueChanged.notify_all();
  }
  // The room closes what waits (a thread that parks after this closes its
  // socket instead); the pool's threads see `stopping` and end.
  s.room->stop();
  s.pool->shutdown();
  s.pool.reset();
  s.room.reset();
  watcher.join();
  return ok;
}

std::string Server::serveBytes(const std::string &input) {
  Impl &s = *impl_;
  Connection conn(input, s.stopping);
  s.http.pretendListening(true);
  s.http.serve(conn, 0,
               Clock::now() +
                   std::chrono::seconds(s.options.requestTimeoutSeconds),
               nullptr);
  s.http.pretendListening(false);
  return conn.output();
}

void Server::stop() {
  Impl &s = *impl_;
  {
    std::lock_guard<std::mutex> lock(s.queueMutex);
    s.stopping.store(true);
    for (Impl::Turn *turn : s.turns)
      turn->cancel.store(true);
    s.queueChanged.notify_all();
  }
  s.http.stopListener();
}

} // namespace pccx::serve
