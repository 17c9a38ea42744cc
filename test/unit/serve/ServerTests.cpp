//===- ServerTests.cpp - the HTTP layer of pccx-serve, hostile clients ----===//
//
// The server over a scripted backend: raw request bytes through
// Server::serveBytes (no socket), and real sockets for the load-related
// guarantees (/health while every slot is busy, 503 at a full queue,
// timeouts, stop, cancellation of a reply whose client left).
//
//===----------------------------------------------------------------------===//

#include "hw/support/JsonText.h"
#include "runtime/grammar/TokenMask.h"
#include "runtime/serve/Server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

using namespace pccx;
using namespace pccx::serve;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

/// Replies with `text` one byte at a time, each after `delay`, until the
/// interrupt is raised or max_tokens bytes are out.
class ScriptedBackend : public Backend {
public:
  std::string text = "hello";
  std::chrono::milliseconds delay{0};
  bool throwInComplete = false;
  std::atomic<int> started{0}, interrupted{0};

  int64_t capacity() const override { return 4096; }
  std::set<int32_t> stopTokens() const override { return {}; }
  bool promptIds(const GenerationRequest &request, std::vector<int32_t> *ids,
                 ApiError *) override {
    size_t n = request.chat ? request.messages.size() : request.prompt.size();
    ids->assign(std::max<size_t>(1, n), 1);
    return true;
  }
  bool complete(const std::vector<int32_t> &, const app::ReplyOptions &options,
                app::Reply *reply, std::string *) override {
    ++started;
    if (throwInComplete)
      throw std::runtime_error("secret internal detail\r\nX-Forged: 1");
    *reply = app::Reply();
    reply->end = app::ReplyEnd::MaxTokens;
    for (int64_t i = 0; i < options.maxTokens; ++i) {
      std::this_thread::sleep_for(delay);
      std::string piece(1, text[size_t(i) % text.size()]);
      reply->tokens.push_back(1);
      reply->text += piece;
      if (options.onText)
        options.onText(piece);
      if (options.interrupt && options.interrupt->load()) {
        ++interrupted;
        reply->end = app::ReplyEnd::Interrupted;
        break;
      }
    }
    return true;
  }
};

ServeOptions quietOptions() {
  ServeOptions o;
  o.modelName = "m";
  o.port = 0;
  o.logRequests = false;
  o.maxBodyBytes = 1024;
  return o;
}

/// The status of each response in `out`, in order.
std::vector<int> statuses(const std::string &out) {
  std::vector<int> s;
  for (size_t at = out.find("HTTP/1.1 "); at != std::string::npos;
       at = out.find("HTTP/1.1 ", at + 1))
    s.push_back(std::atoi(out.c_str() + at + 9));
  return s;
}

/// The body after the first response's headers.
std::string bodyOf(const std::string &out) {
  size_t at = out.find("\r\n\r\n");
  return at == std::string::npos ? "" : out.substr(at + 4);
}

std::string post(const std::string &path, const std::string &body,
                 const std::string &extraHeaders = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + extraHeaders +
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

} // namespace

TEST(ServeJson, InvalidUtf8IsReplacedNotThrown) {
  json j = {{"s", std::string("a\xff\xfe" "b")}};
  EXPECT_THROW((void)j.dump(), json::type_error); // what used to abort
  EXPECT_EQ(support::jsonText(j), "{\"s\":\"a\xef\xbf\xbd\xef\xbf\xbd" "b\"}");
}

TEST(ServeJson, LogLinesCannotBeForged) {
  EXPECT_EQ(support::logSafe("/a\nb\\c\x1b[0m\xc3\xa9"),
            "/a\\x0ab\\x5cc\\x1b[0m\\xc3\\xa9");
}

TEST(ServeHttp, PathWithInvalidUtf8Is404Json) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string out = server.serveBytes("GET /%FF%FE HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(statuses(out), std::vector<int>{404}) << out;
  json body = json::parse(bodyOf(out));
  EXPECT_EQ(body["error"]["code"], "unknown_url");
}

TEST(ServeHttp, NonUtf8ModelNameAndReplyText) {
  ScriptedBackend backend;
  backend.text = "\xff\xc3";
  ServeOptions o = quietOptions();
  o.modelName = "bad\xfename";
  Server server(backend, o);
  std::string out = server.serveBytes(
      "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" +
      post("/v1/completions",
           R"({"prompt": "hi", "max_tokens": 3, "stream": true})") +
      post("/v1/completions", R"({"prompt": "hi", "max_tokens": 3})"));
  EXPECT_EQ(statuses(out), (std::vector<int>{200, 200, 200})) << out;
  EXPECT_NE(out.find("bad\xef\xbf\xbdname"), std::string::npos);
  EXPECT_NE(out.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(out.find('\xff'), std::string::npos);
}

TEST(ServeHttp, ExceptionTextStaysOutOfTheResponse) {
  ScriptedBackend backend;
  backend.throwInComplete = true;
  Server server(backend, quietOptions());
  std::string out = server.serveBytes(
      post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2})"));
  ASSERT_EQ(statuses(out), std::vector<int>{500}) << out;
  EXPECT_EQ(out.find("secret"), std::string::npos) << out;
  EXPECT_EQ(out.find("X-Forged"), std::string::npos) << out;
  EXPECT_EQ(out.find("EXCEPTION_WHAT"), std::string::npos) << out;
}

TEST(ServeHttp, NulInAHeaderIsRefused) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  // The parser would have cut the value at the NUL and served the request.
  std::string out = server.serveBytes(
      std::string("GET /health HTTP/1.1\r\nHost: x\r\nX-Thing: ab") +
      std::string(1, '\0') + "cd\r\n\r\n");
  ASSERT_EQ(statuses(out), std::vector<int>{400}) << out;
  EXPECT_EQ(json::parse(bodyOf(out))["error"]["code"], "invalid_header");
  // A NUL in a body is the body's business (here: not JSON).
  out = server.serveBytes(post("/v1/completions", std::string("{\"a\"") +
                                                      std::string(1, '\0') +
                                                      "}"));
  ASSERT_EQ(statuses(out), std::vector<int>{400}) << out;
  EXPECT_EQ(json::parse(bodyOf(out))["error"]["code"], "invalid_json");
  out = server.serveBytes("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{200}) << out;
}

TEST(ServeHttp, ChunkedBodyOverTheLimitIs413) {
  ScriptedBackend backend;
  Server server(backend, quietOptions()); // 1024 bytes at most
  std::string chunk(1000, 'x');
  std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\n\r\n";
  for (int i = 0; i < 100; ++i)
    req += "3e8\r\n" + chunk + "\r\n";
  req += "0\r\n\r\n";
  std::string out = server.serveBytes(req);
  EXPECT_EQ(statuses(out), std::vector<int>{413}) << out.substr(0, 400);
  EXPECT_EQ(backend.started.load(), 0);
}

TEST(ServeHttp, ChunkedBodyWithinTheLimitIsServed) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  std::string out = server.serveBytes(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
      "chunked\r\n\r\n" +
      std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{200}) << out;
}

TEST(ServeHttp, BodyWithoutLengthOverTheLimitIs413) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string out = server.serveBytes(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n" +
      std::string(1 << 20, ' '));
  EXPECT_EQ(statuses(out), std::vector<int>{413}) << out.substr(0, 400);
  // Not a route: httplib reads the body itself, within the same budget.
  out = server.serveBytes("POST /nope HTTP/1.1\r\nHost: x\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n" +
                          std::string(20000, '1'));
  ASSERT_FALSE(statuses(out).empty());
  EXPECT_NE(statuses(out)[0], 200);
}

TEST(ServeHttp, ConflictingFramingIsRefused) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string body = R"({"prompt": "hi", "max_tokens": 2})";
  std::string out = server.serveBytes(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(statuses(out), std::vector<int>{400}) << out;
  EXPECT_NE(out.find("invalid_content_length"), std::string::npos);
  out = server.serveBytes(post("/v1/completions", body,
                               "Transfer-Encoding: chunked\r\n"));
  EXPECT_EQ(statuses(out), std::vector<int>{400}) << out;
  out = server.serveBytes(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
      "99999999999\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{413}) << out;
  EXPECT_EQ(backend.started.load(), 0);
}

TEST(ServeHttp, PipelinedRequestsAreAllAnswered) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string out = server.serveBytes(
      health + post("/v1/completions", R"({"prompt": "hi", "max_tokens": 2})") +
      health);
  EXPECT_EQ(statuses(out), (std::vector<int>{200, 200, 200})) << out;
}

namespace {

/// A server on a free loopback port, run on its own thread.
class LiveServer {
public:
  LiveServer(Backend &backend, ServeOptions options)
      : server_(backend, options) {
    std::string error;
    port_ = server_.bind(&error);
    EXPECT_GT(port_, 0) << error;
    thread_ = std::thread([this] { ran_ = server_.run(); });
  }
  ~LiveServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  Server &server() { return server_; }
  httplib::Client client(int timeoutSeconds = 30) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(timeoutSeconds, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

private:
  Server server_;
  int port_ = -1;
  bool ran_ = false;
  std::thread thread_;
};

int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  return fd;
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

TEST(ServeLoad, HealthAnswersAndQueueRefusesWhileEverySlotIsBusy) {
  ScriptedBackend backend;
  // 40 tokens of 200 ms: the first reply outlasts the checks below even on
  // a loaded machine or under sanitizers.
  backend.delay = std::chrono::milliseconds(200);
  ServeOptions o = quietOptions();
  o.maxQueue = 7; // 8 generation requests: one served, seven waiting
  LiveServer live(backend, o);
  std::vector<std::future<int>> busy;
  for (int i = 0; i < 8; ++i)
    busy.push_back(std::async(std::launch::async, [&] {
      auto c = live.client();
      auto r = c.Post("/v1/completions", R"({"prompt": "x", "max_tokens": 40})",
                      "application/json");
      return r ? r->status : -1;
    }));
  // Wait until all eight hold the queue.
  for (int i = 0; i < 100; ++i) {
    auto r = live.client().Get("/health");
    if (r && json::parse(r->body)["requests_in_queue"] == 8)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto t0 = Clock::now();
  auto health = live.client(2).Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(secondsSince(t0), 1.0);
  EXPECT_EQ(json::parse(health->body)["requests_in_queue"], 8);
  auto refused = live.client(2).Post(
      "/v1/completions", R"({"prompt": "x", "max_tokens": 1})",
      "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("queue_full"), std::string::npos);
  live.server().stop(); // ends the one generating, refuses the waiting
  for (auto &f : busy) {
    int status = f.get();
    EXPECT_TRUE(status == 200 || status == 503) << status;
  }
}

TEST(ServeLoad, IdleConnectionsHoldNoThreadAndAreCapped) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.requestTimeoutSeconds = 30;
  o.threads = 2;
  o.maxQueue = 1;
  o.maxWaitingConnections = 200;
  LiveServer live(backend, o);
  // Far more connections that send nothing than threads: each used to hold
  // a thread for the request timeout (counted from when a thread took it),
  // so /health waited about N / threads x the timeout.
  std::vector<int> idle;
  for (int i = 0; i < 150; ++i)
    idle.push_back(connectTo(live.port()));
  auto t0 = Clock::now();
  auto health = live.client(5).Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(secondsSince(t0), 2.0);
  // Beyond the room's 200, the connections nearest their deadline (the
  // oldest) are closed: the first ones read end of file.
  for (int i = 0; i < 150; ++i)
    idle.push_back(connectTo(live.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  char c;
  timeval tv{2, 0};
  ::setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(idle[0], &c, 1, 0), 0);
  auto again = live.client(5).Get("/health");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  for (int fd : idle)
    ::close(fd);
}

TEST(ServeLoad, SlowClientsTimeOutAndStopIsPrompt) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.requestTimeoutSeconds = 1;
  o.threads = 2;
  o.maxQueue = 0;
  auto live = std::make_unique<LiveServer>(backend, o);
  // More trickling clients than connection threads: each sends a byte of
  // its request line every 300 ms, never finishing it.
  std::vector<int> slow;
  for (int i = 0; i < 5; ++i)
    slow.push_back(connectTo(live->port()));
  auto t0 = Clock::now();
  bool healthy = false;
  std::thread trickle([&] {
    for (int round = 0; round < 10; ++round) {
      for (int fd : slow)
        (void)::send(fd, "G", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  // Within a few request timeouts /health is answered again.
  while (secondsSince(t0) < 8 && !healthy) {
    auto r = live->client(1).Get("/health");
    healthy = r && r->status == 200;
  }
  EXPECT_TRUE(healthy);
  trickle.join();
  // Stop with a trickling client connected ends within seconds.
  int again = connectTo(live->port());
  (void)::send(again, "GET /he", 7, MSG_NOSIGNAL);
  auto t1 = Clock::now();
  live.reset();
  EXPECT_LT(secondsSince(t1), 3.0);
  for (int fd : slow)
    ::close(fd);
  ::close(again);
}

TEST(ServeLoad, CompleteReplyOfAClientThatLeftIsCancelled) {
  ScriptedBackend backend;
  backend.delay = std::chrono::milliseconds(20);
  LiveServer live(backend, quietOptions());
  {
    auto c = live.client(1); // gives up after 1 s, closing the connection
    auto r = c.Post("/v1/completions",
                    R"({"prompt": "x", "max_tokens": 1000})",
                    "application/json");
    EXPECT_FALSE(r);
  }
  auto t0 = Clock::now();
  while (backend.interrupted.load() == 0 && secondsSince(t0) < 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // 1000 tokens take 20 s; the reply ends soon after the client left.
  EXPECT_EQ(backend.interrupted.load(), 1);
  EXPECT_LT(secondsSince(t0), 5.0);
}

TEST(ServeLoad, StopBeforeRunStillEndsIt) {
  // A SIGTERM can arrive between bind() and run(): run() must still return.
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string error;
  ASSERT_GT(server.bind(&error), 0) << error;
  server.stop();
  auto done = std::async(std::launch::async, [&] { return server.run(); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

namespace {

/// The value of response header `name` in the first response of `out`, or
/// "(none)".
std::string headerOf(const std::string &out, const std::string &name) {
  std::string head = out.substr(0, out.find("\r\n\r\n"));
  size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos)
    return "(none)";
  at += name.size() + 4;
  return head.substr(at, head.find("\r\n", at) - at);
}

} // namespace

TEST(ServeAuth, BearerTokenMatches) {
  EXPECT_TRUE(bearerTokenMatches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearerTokenMatches("bearer  s3cret", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Bearer s3cretX", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Bearer S3cret", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("s3cret", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Bearer ", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("", "s3cret"));
  EXPECT_FALSE(bearerTokenMatches("Bearer ", "")); // no key matches nothing
}

TEST(ServeAuth, V1RoutesNeedTheKeyHealthDoesNot) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.apiKey = "s3cret";
  Server server(backend, o);
  const std::string body = R"({"prompt": "hi", "max_tokens": 2})";

  std::string out = server.serveBytes(post("/v1/completions", body));
  ASSERT_EQ(statuses(out), std::vector<int>{401}) << out;
  EXPECT_EQ(headerOf(out, "WWW-Authenticate"), "Bearer");
  json error = json::parse(bodyOf(out))["error"];
  EXPECT_EQ(error["type"], "invalid_request_error");
  EXPECT_TRUE(error["code"].is_null());
  EXPECT_EQ(backend.started.load(), 0);

  out = server.serveBytes(
      post("/v1/completions", body, "Authorization: Bearer wrong\r\n"));
  ASSERT_EQ(statuses(out), std::vector<int>{401}) << out;
  EXPECT_EQ(json::parse(bodyOf(out))["error"]["code"], "invalid_api_key");

  out = server.serveBytes("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{401}) << out;
  out = server.serveBytes("GET /v1/nope HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{401}) << out;

  out = server.serveBytes(
      post("/v1/completions", body, "Authorization: Bearer s3cret\r\n") +
      "GET /v1/models HTTP/1.1\r\nHost: x\r\n"
      "Authorization: Bearer s3cret\r\n\r\n" +
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(statuses(out), (std::vector<int>{200, 200, 200})) << out;
  EXPECT_EQ(backend.started.load(), 1);

  // Two Authorization headers are one too many, even if one is right.
  out = server.serveBytes(post("/v1/completions", body,
                               "Authorization: Bearer wrong\r\n"
                               "Authorization: Bearer s3cret\r\n"));
  EXPECT_EQ(statuses(out), std::vector<int>{401}) << out;
}

TEST(ServeCors, NoHeadersWithoutTheOption) {
  ScriptedBackend backend;
  Server server(backend, quietOptions());
  std::string out = server.serveBytes(
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
      "Origin: http://a.example\r\nAccess-Control-Request-Method: "
      "POST\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{404}) << out;
  EXPECT_EQ(out.find("Access-Control-"), std::string::npos) << out;
  out = server.serveBytes(post("/v1/completions",
                               R"({"prompt": "hi", "max_tokens": 2})",
                               "Origin: http://a.example\r\n"));
  EXPECT_EQ(statuses(out), std::vector<int>{200}) << out;
  EXPECT_EQ(out.find("Access-Control-"), std::string::npos) << out;
}

TEST(ServeCors, PreflightAndAllowedOrigins) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.corsOrigins = {"http://a.example", "http://b.example"};
  o.apiKey = "s3cret"; // preflights carry no key
  Server server(backend, o);
  std::string out = server.serveBytes(
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
      "Origin: http://b.example\r\nAccess-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: authorization, content-type\r\n\r\n");
  ASSERT_EQ(statuses(out), std::vector<int>{204}) << out;
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Origin"), "http://b.example");
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Methods"),
            "GET, POST, OPTIONS");
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Headers"),
            "Authorization, Content-Type");
  EXPECT_EQ(headerOf(out, "Vary"), "Origin");

  // Errors, refusals and streams carry the header too.
  const std::string key = "Authorization: Bearer s3cret\r\n";
  const std::string origin = "Origin: http://a.example\r\n";
  out = server.serveBytes(post("/v1/completions", "{", origin));
  EXPECT_EQ(statuses(out), std::vector<int>{401}) << out;
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Origin"), "http://a.example");
  out = server.serveBytes(post("/v1/completions", "{", origin + key));
  EXPECT_EQ(statuses(out), std::vector<int>{400}) << out;
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Origin"), "http://a.example");
  out = server.serveBytes(post(
      "/v1/completions", R"({"prompt": "hi", "max_tokens": 2, "stream": true})",
      origin + key));
  EXPECT_EQ(statuses(out), std::vector<int>{200}) << out;
  EXPECT_NE(out.find("data: [DONE]"), std::string::npos) << out;
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Origin"), "http://a.example");

  // Another origin gets no CORS headers, and its preflight no answer.
  out = server.serveBytes(
      post("/v1/completions", "{", "Origin: http://evil.example\r\n" + key));
  EXPECT_EQ(statuses(out), std::vector<int>{400}) << out;
  EXPECT_EQ(out.find("Access-Control-"), std::string::npos) << out;
  out = server.serveBytes(
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
      "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n"
      "\r\n");
  EXPECT_NE(statuses(out), std::vector<int>{204}) << out;
  EXPECT_EQ(out.find("Access-Control-"), std::string::npos) << out;
}

TEST(ServeCors, AnyOrigin) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.corsOrigins = {"*"};
  Server server(backend, o);
  std::string out = server.serveBytes(
      "GET /health HTTP/1.1\r\nHost: x\r\nOrigin: http://c.example\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{200}) << out;
  EXPECT_EQ(headerOf(out, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(headerOf(out, "Vary"), "(none)");
  // A request without an Origin is not a browser's cross-origin call.
  out = server.serveBytes("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(out.find("Access-Control-"), std::string::npos) << out;
}

TEST(ServeWebUi, PageNeedsNoKeyItsApiDoes) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.apiKey = "s3cret";
  o.modelCard = "Model card:\n  model             test\n";
  Server server(backend, o);
  std::string out = server.serveBytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(statuses(out), std::vector<int>{200}) << out;
  EXPECT_EQ(headerOf(out, "Content-Type"), "text/html; charset=utf-8");
  // The page may call only its own server, and no other site may frame it.
  std::string policy = headerOf(out, "Content-Security-Policy");
  EXPECT_NE(policy.find("connect-src 'self'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("frame-ancestors 'none'"), std::string::npos) << policy;
  std::string page = bodyOf(out);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u) << page.substr(0, 80);
  EXPECT_NE(page.find("</html>"), std::string::npos);

  out = server.serveBytes("GET /v1/model-card HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(statuses(out), std::vector<int>{401}) << out;
  out = server.serveBytes("GET /v1/model-card HTTP/1.1\r\nHost: x\r\n"
                          "Authorization: Bearer s3cret\r\n\r\n");
  ASSERT_EQ(statuses(out), std::vector<int>{200}) << out;
  EXPECT_EQ(headerOf(out, "Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(bodyOf(out), o.modelCard);
}

TEST(ServeWebUi, OffIsAnUnknownRoute) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.webUi = false;
  Server server(backend, o); // and no model card
  for (const char *path : {"/", "/v1/model-card"}) {
    std::string out = server.serveBytes(std::string("GET ") + path +
                                        " HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_EQ(statuses(out), std::vector<int>{404}) << out;
    EXPECT_EQ(json::parse(bodyOf(out))["error"]["code"], "unknown_url");
  }
}

//===----------------------------------------------------------------------===//
// Per-request budgets, interleaving, streamed logprobs, the idle room
//===----------------------------------------------------------------------===//

namespace {

/// A /v1/completions body listing `count` prompts of `text`.
std::string promptList(size_t count, const std::string &text,
                       const std::string &rest) {
  std::string body = "{\"prompt\": [";
  for (size_t i = 0; i < count; ++i)
    body += (i ? ",\"" : "\"") + text + "\"";
  return body + "]" + rest + "}";
}

ServeOptions budgetOptions() {
  ServeOptions o = quietOptions();
  o.maxBodyBytes = 1 << 20;
  return o;
}

} // namespace

// 3 000 one-token prompts in a 12 KB body: each choice used to copy the
// whole request, all prompts included (memory grew with the square of the
// count, to gigabytes), before anything was checked.
TEST(ServeBudget, APromptListBeyondTheLimitIsRefusedBeforeAnyWork) {
  ScriptedBackend backend;
  Server server(backend, budgetOptions());
  std::string out = server.serveBytes(
      post("/v1/completions", promptList(3000, "x", ", \"max_tokens\": 1")));
  ASSERT_EQ(statuses(out), std::vector<int>{400}) << out.substr(0, 400);
  json error = json::parse(bodyOf(out))["error"];
  EXPECT_EQ(error["param"], "prompt");
  EXPECT_EQ(error["code"], "too_many_prompts");
  EXPECT_NE(error["message"].get<std::string>().find("at most 32"),
            std::string::npos);
  EXPECT_EQ(backend.started.load(), 0);
  // At the limit, every prompt is one choice.
  out = server.serveBytes(
      post("/v1/completions", promptList(32, "x", ", \"max_tokens\": 1")));
  ASSERT_EQ(statuses(out), std::vector<int>{200});
  EXPECT_EQ(json::parse(bodyOf(out))["choices"].size(), 32u);
}

// The tokens of all of a request's prompts and replies, and the prompt
// tokens it has scored, are counted before it waits or runs.
TEST(ServeBudget, RequestAndScoredTokensAreCountedBeforeWork) {
  ScriptedBackend backend;
  ServeOptions o = budgetOptions();
  o.limits.maxRequestTokens = 100;
  o.limits.maxScoredTokens = 30;
  Server server(backend, o);
  // 4 x (10 prompt tokens + 20 reply tokens) = 120 > 100.
  std::string out = server.serveBytes(post(
      "/v1/completions", promptList(4, "0123456789", ", \"max_tokens\": 20")));
  ASSERT_EQ(statuses(out), std::vector<int>{400});
  json error = json::parse(bodyOf(out))["error"];
  EXPECT_EQ(error["code"], "request_too_large");
  EXPECT_NE(error["message"].get<std::string>().find("needs 120 tokens"),
            std::string::npos)
      << error;
  // 3 x 30 = 90 fits.
  out = server.serveBytes(post(
      "/v1/completions", promptList(3, "0123456789", ", \"max_tokens\": 20")));
  EXPECT_EQ(statuses(out), std::vector<int>{200});
  const int started = backend.started.load();
  EXPECT_EQ(started, 3);
  // Scored: 4 x 10 echoed prompt tokens > 30.
  out = server.serveBytes(
      post("/v1/completions",
           promptList(4, "0123456789",
                      ", \"max_tokens\": 0, \"echo\": true, \"logprobs\": 1")));
  ASSERT_EQ(statuses(out), std::vector<int>{400});
  error = json::parse(bodyOf(out))["error"];
  EXPECT_EQ(error["param"], "echo");
  EXPECT_EQ(error["code"], "request_too_large");
  EXPECT_EQ(backend.started.load(), started);
}

// By default the budgets follow the context: a single request that fits
// the context always fits them.
TEST(ServeBudget, DefaultsFollowTheContext) {
  ScriptedBackend backend; // a context of 4096
  Server server(backend, budgetOptions());
  std::string out = server.serveBytes(post(
      "/v1/completions",
      promptList(1, std::string(3000, 'x'), ", \"max_tokens\": 1000")));
  EXPECT_EQ(statuses(out), std::vector<int>{200});
  // 5 x (3000 + 1000) > 4 x 4096.
  out = server.serveBytes(post(
      "/v1/completions",
      promptList(5, std::string(3000, 'x'), ", \"max_tokens\": 1000")));
  ASSERT_EQ(statuses(out), std::vector<int>{400});
  EXPECT_EQ(json::parse(bodyOf(out))["error"]["code"], "request_too_large");
}

// A list's prompts each wait for a turn of their own: a request that came
// while the list was answered goes in between its prompts, not after all
// of them.
TEST(ServeLoad, AListOfPromptsLetsOthersInBetween) {
  ScriptedBackend backend;
  backend.delay = std::chrono::milliseconds(20);
  LiveServer live(backend, budgetOptions());
  std::atomic<int> finished{0};
  int listPlace = 0, singlePlace = 0;
  // 6 prompts x 40 tokens x 20 ms: about 5 s, so that the other request
  // arrives long before the list ends even on a loaded machine.
  std::thread list([&] {
    auto r = live.client().Post(
        "/v1/completions", promptList(6, "x", ", \"max_tokens\": 40"),
        "application/json");
    EXPECT_TRUE(r && r->status == 200);
    listPlace = ++finished;
  });
  while (backend.started.load() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto r = live.client().Post("/v1/completions",
                              R"({"prompt": "x", "max_tokens": 1})",
                              "application/json");
  EXPECT_TRUE(r && r->status == 200);
  singlePlace = ++finished;
  list.join();
  EXPECT_EQ(singlePlace, 1);
  EXPECT_EQ(listPlace, 2);
}

namespace {

/// Replies with one-byte tokens carrying log-probabilities, and counts
/// the tokens its decoders read.
class ScoringBackend : public ScriptedBackend {
public:
  mutable std::atomic<int64_t> decoded{0};

  std::string tokenText(int32_t) const override { return "a"; }
  std::unique_ptr<TextDecoder> textDecoder() const override {
    struct Counting : TextDecoder {
      explicit Counting(std::atomic<int64_t> &n) : n(n) {}
      int64_t push(int32_t) override { return n++, chars++; }
      std::string finish() override { return std::string(size_t(chars), 'a'); }
      std::atomic<int64_t> &n;
      int64_t chars = 0;
    };
    return std::make_unique<Counting>(decoded);
  }
  bool complete(const std::vector<int32_t> &, const app::ReplyOptions &options,
                app::Reply *reply, std::string *) override {
    *reply = app::Reply();
    reply->end = app::ReplyEnd::MaxTokens;
    for (int64_t i = 0; i < options.maxTokens; ++i) {
      reply->tokens.push_back(7);
      reply->text += "a";
      app::TokenLogprob score;
      score.token = 7;
      score.logprob = -0.5;
      reply->logprobs.push_back(score);
      reply->textTokens = reply->tokens.size();
      if (options.onText)
        options.onText("a");
    }
    return true;
  }
};

} // namespace

// Each streamed chunk's logprobs offsets come from one decoder that reads
// every token once: 1 000 tokens, 1 000 reads (each chunk used to decode
// the whole reply again, 90 s of CPU for 1 000 tokens).
TEST(ServeLogprobs, StreamedOffsetsReadEachTokenOnce) {
  ScoringBackend backend;
  ServeOptions o = budgetOptions();
  o.limits.maxTokens = 1000;
  Server server(backend, o);
  std::string out = server.serveBytes(post(
      "/v1/completions",
      R"({"prompt": "x", "max_tokens": 1000, "logprobs": 1, "stream": true})"));
  ASSERT_EQ(statuses(out), std::vector<int>{200});
  EXPECT_EQ(backend.decoded.load(), 1000);
  // The offsets still count from the reply's start.
  const size_t last = out.rfind("\"text_offset\":[");
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(out.compare(last, 19, "\"text_offset\":[999]"), 0)
      << out.substr(last, 40);
}

// Past the room's capacity, connections that never sent a byte are closed
// first: a flood of silent sockets does not push out a kept-alive client
// inside its idle timeout.
TEST(ServeLoad, SilentConnectionsDoNotEvictAKeptAliveClient) {
  ScriptedBackend backend;
  ServeOptions o = quietOptions();
  o.requestTimeoutSeconds = 30;
  o.idleTimeoutSeconds = 20;
  o.maxWaitingConnections = 50;
  LiveServer live(backend, o);
  httplib::Client kept("127.0.0.1", live.port());
  kept.set_keep_alive(true);
  kept.set_read_timeout(5, 0);
  int sockets = 0; // the client's new connections
  kept.set_socket_options([&](socket_t) { ++sockets; });
  auto first = kept.Get("/health");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  std::vector<int> silent;
  for (int i = 0; i < 120; ++i)
    silent.push_back(connectTo(live.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The kept-alive connection is still open: the same socket is served.
  auto second = kept.Get("/health");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(sockets, 1);
  // The oldest silent ones were closed.
  char c;
  timeval tv{2, 0};
  ::setsockopt(silent[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::recv(silent[0], &c, 1, 0), 0);
  for (int fd : silent)
    ::close(fd);
}

namespace {

/// Structured output over a small vocabulary whose masks may take one step:
/// every reply fails as a schema whose masks run past their work budget.
class TightBudgetBackend : public ScriptedBackend {
public:
  std::shared_ptr<grammar::JsonConstraint>
  jsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                 std::string *) override {
    std::vector<std::string> texts;
    for (int b = 0; b < 256; ++b)
      texts.push_back(std::string(1, char(b)));
    auto constraint = std::make_shared<grammar::JsonConstraint>(
        std::move(schema),
        std::make_shared<grammar::TokenVocabulary>(std::move(texts)),
        std::set<int32_t>{0});
    constraint->setWorkBudget(1);
    return constraint;
  }
  bool complete(const std::vector<int32_t> &, const app::ReplyOptions &options,
                app::Reply *, std::string *error) override {
    std::vector<float> logits(256, 0.0f);
    if (options.constraint && !options.constraint->mask(logits.data(), 256)) {
      *error = options.constraint->error();
      return false;
    }
    return true;
  }
};

} // namespace

// A schema whose token masks run past their work budget is the request's
// fault: 400 schema_too_complex naming response_format, complete or
// streamed (the error used to be a 500).
TEST(ServeStructured, AMaskPastItsBudgetIsA400) {
  TightBudgetBackend backend;
  Server server(backend, budgetOptions());
  const std::string body =
      R"({"messages": [{"role": "user", "content": "x"}], "response_format":
         {"type": "json_schema", "json_schema": {"name": "x", "schema":
         {"type": "object", "properties": {"a": {"type": "string"}}}}}})";
  std::string out = server.serveBytes(post("/v1/chat/completions", body));
  ASSERT_EQ(statuses(out), std::vector<int>{400}) << out;
  json error = json::parse(bodyOf(out))["error"];
  EXPECT_EQ(error["code"], "schema_too_complex");
  EXPECT_EQ(error["param"], "response_format");
  EXPECT_NE(error["message"].get<std::string>().find("work budget"),
            std::string::npos)
      << error;
  out = server.serveBytes(post("/v1/chat/completions",
                               body.substr(0, body.size() - 1) +
                                   ", \"stream\": true}"));
  EXPECT_NE(out.find("\"code\":\"schema_too_complex\""), std::string::npos)
      << out;
}
