//===- Server.cpp - the OpenAI-compatible HTTP server ---------------------===//

#include "runtime/app/Structured.h"
#include "runtime/serve/Server.h"

#include "hw/support/JsonText.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
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
using Clock = std::chrono::steady_clock;

namespace {

/// A request's line and headers may take this much besides the body.
constexpr size_t kMaxHeadBytes = 64 << 10;
/// Requests served on one kept-alive connection before it is closed.
constexpr int kMaxRequestsPerConnection = 100;
/// A write that makes no progress for this long fails (a client that
/// stopped reading); once the server is stopping, after one second.
constexpr int kWriteTimeoutSeconds = 30;
/// Waits are cut into slices this long to notice the stop flag.
constexpr int kSliceMs = 100;

void sendJson(httplib::Response &res, int status, const json &body) {
  res.status = status;
  res.set_content(jsonText(body), "application/json");
}

void sendError(httplib::Response &res, const ApiError &error) {
  sendJson(res, error.status, errorBody(error));
}

/// "data: {...}\n\n", one server-sent event.
std::string event(const json &chunk) {
  return "data: " + jsonText(chunk) + "\n\n";
}

/// Characters (code points) of UTF-8 text: the bytes that start one.
int64_t characters(const std::string &text) {
  int64_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80;
  return n;
}

ApiError apiError(int status, const std::string &code,
                  const std::string &message) {
  ApiError e;
  e.status = status;
  e.code = code;
  e.message = message;
  if (status >= 500)
    e.type = "server_error";
  return e;
}

/// One client connection, read and written by the server itself rather
/// than by httplib's socket stream, so that every limit holds while the
/// bytes arrive: a budget for the bytes of one request (whatever its
/// framing), a deadline for reading it, and the server's stop flag. The
/// same class serves bytes from memory (Server::serveBytes).
class Connection : public httplib::Stream {
public:
  Connection(int fd, const std::atomic<bool> &stopping)
      : fd_(fd), stopping_(stopping) {}
  Connection(const std::string &input, const std::atomic<bool> &stopping)
      : input_(&input), stopping_(stopping) {}

  /// Limits for reading the next request.
  void beginRequest(size_t budget, Clock::time_point deadline) {
    reading_ = true;
    budget_ = budget;
    used_ = 0;
    deadline_ = deadline;
    inHead_ = true;
    headEnd_ = 0;
    headNul_ = false;
  }
  /// The request's line or a header held a NUL byte, which RFC 9110 does
  /// not allow in a field (the parser would cut the value there).
  bool headHasNul() const { return headNul_; }
  /// The request is read: what follows (generation, the response) is not
  /// bound by its reading limits.
  void endRequest() { reading_ = false; }
  bool overLimit() const { return overLimit_; }
  bool timedOut() const { return timedOut_; }
  /// The rest of the connection cannot be trusted (a body left unread, a
  /// limit hit): close it after the response.
  void closeAfterResponse() { close_ = true; }
  bool mustClose() const { return close_ || overLimit_ || timedOut_; }

  /// Waits for the first byte of a request; false on EOF, error, stop or
  /// when nothing came before `until`.
  bool waitForRequest(Clock::time_point until) {
    if (pos_ < len_)
      return true; // pipelined: already buffered
    reading_ = true;
    budget_ = SIZE_MAX;
    used_ = 0;
    deadline_ = until;
    bool ok = fill();
    timedOut_ = false; // an idle connection is closed without a reply
    return ok;
  }

  /// The client closed the connection (or it broke); reads nothing.
  bool clientGone() const {
    if (fd_ < 0)
      return false;
    pollfd p{fd_, short(POLLIN | POLLRDHUP), 0};
    if (::poll(&p, 1, 0) <= 0)
      return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
      return true;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

  const std::string &output() const { return output_; }
  /// Bytes read from the socket that no request has taken yet (pipelined).
  bool hasBuffered() const { return pos_ < len_; }
  int fd() const { return fd_; }

  bool is_readable() const override { return pos_ < len_ || fd_ >= 0; }

  bool is_writable() const override {
    if (fd_ < 0)
      return true;
    return waitWritable();
  }

  ssize_t read(char *ptr, size_t size) override {
    if (size == 0)
      return 0;
    if (reading_ && used_ >= budget_) {
      overLimit_ = true;
      return -1;
    }
    if (pos_ == len_ && !fill())
      return eof_ ? 0 : -1; // 0: the client closed its side cleanly
    size_t n = std::min(size, len_ - pos_);
    if (reading_)
      n = std::min(n, budget_ - used_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    if (reading_)
      used_ += n;
    if (inHead_)
      scanHead(ptr, n);
    return ssize_t(n);
  }

  ssize_t write(const char *ptr, size_t size) override {
    if (fd_ < 0) {
      output_.append(ptr, size);
      return ssize_t(size);
    }
    if (!waitWritable())
      return -1;
    ssize_t n;
    do
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return 0; // httplib's write loop tries again
    return n;
  }

  void get_remote_ip_and_port(std::string &ip, int &port) const override {
    address(&getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string &ip, int &port) const override {
    address(&getsockname, ip, port);
  }
  // httplib uses the socket only to refuse descriptors beyond select()'s
  // FD_SETSIZE; this stream waits with poll(), so it reports none.
  socket_t socket() const override { return INVALID_SOCKET; }

private:
  /// Follows the head's bytes to the blank line that ends it.
  void scanHead(const char *p, size_t n) {
    static const char kEnd[] = "\r\n\r\n";
    for (size_t i = 0; i < n && inHead_; ++i) {
      headNul_ |= p[i] == '\0';
      headEnd_ = p[i] == kEnd[headEnd_] ? headEnd_ + 1 : p[i] == '\r' ? 1 : 0;
      inHead_ = headEnd_ < 4;
    }
  }
  /// Reads more bytes into the buffer, within the deadline.
  bool fill() {
    pos_ = len_ = 0;
    eof_ = false;
    if (fd_ < 0) {
      if (inputPos_ >= input_->size()) {
        eof_ = true;
        return false;
      }
      len_ = std::min(sizeof buf_, input_->size() - inputPos_);
      std::memcpy(buf_, input_->data() + inputPos_, len_);
      inputPos_ += len_;
      return true;
    }
    Clock::time_point until =
        reading_ ? deadline_
                 : Clock::now() + std::chrono::seconds(kWriteTimeoutSeconds);
    for (;;) {
      if (stopping_.load())
        return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      until - Clock::now())
                      .count();
      if (left <= 0) {
        timedOut_ = true;
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, int(std::min<long long>(left, kSliceMs)));
      if (ready < 0 && errno != EINTR)
        return false;
      if (ready <= 0)
        continue;
      ssize_t n = ::recv(fd_, buf_, sizeof buf_, MSG_DONTWAIT);
      if (n > 0) {
        len_ = size_t(n);
        return true;
      }
      if (n == 0) {
        eof_ = true;
        return false;
      }
      if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
        return false;
    }
  }

  bool waitWritable() const {
    auto start = Clock::now();
    for (;;) {
      pollfd p{fd_, POLLOUT, 0};
      int ready = ::poll(&p, 1, kSliceMs);
      if (ready > 0)
        return !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
      if (ready < 0 && errno != EINTR)
        return false;
      auto waited = Clock::now() - start;
      if (waited > std::chrono::seconds(kWriteTimeoutSeconds) ||
          (stopping_.load() && waited > std::chrono::seconds(1)))
        return false;
    }
  }

  void address(int (*get)(int, sockaddr *, socklen_t *), std::string &ip,
               int &port) const {
    ip = "-";
    port = 0;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (fd_ < 0 || get(fd_, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
      return;
    char text[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
      auto *a = reinterpret_cast<sockaddr_in *>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      auto *a = reinterpret_cast<sockaddr_in6 *>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  int fd_ = -1;
  const std::string *input_ = nullptr;
  size_t inputPos_ = 0;
  const std::atomic<bool> &stopping_;
  std::string output_;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
  bool reading_ = false;
  size_t budget_ = SIZE_MAX, used_ = 0;
  Clock::time_point deadline_;
  bool overLimit_ = false, timedOut_ = false, close_ = false, eof_ = false;
  bool inHead_ = false, headNul_ = false;
  size_t headEnd_ = 0; ///< bytes of "\r\n\r\n" seen in a row
};

/// Sockets with no request to read: new connections before their first
/// byte, kept-alive ones between requests. One thread polls them all, so an
/// idle client holds no serving thread; a socket that becomes readable is
/// handed to `ready` (which queues it for a thread), one whose deadline
/// passes is closed. At most `capacity` wait: past it a new connection
/// that has sent nothing yet is closed (the oldest), else the one closest
/// to its deadline, so a flood of idle connections cannot grow the room,
/// keep newer clients out, or push out clients being served.
class WaitingRoom {
public:
  /// `deadline` is when reading the socket's next request must end.
  using Ready =
      std::function<void(int fd, int served, Clock::time_point deadline)>;

  WaitingRoom(size_t capacity, int requestTimeoutSeconds, Ready ready)
      : capacity_(capacity), requestTimeout_(requestTimeoutSeconds),
        ready_(std::move(ready)) {
    if (::pipe(wake_) != 0)
      wake_[0] = wake_[1] = -1;
    thread_ = std::thread([this] { loop(); });
  }
  ~WaitingRoom() { stop(); }

  /// `fresh`: a new connection, whose first request must be read by
  /// `deadline` (its accept time plus the request timeout); otherwise a
  /// kept-alive one, closed if nothing comes by `deadline`.
  void park(int fd, int served, Clock::time_point deadline, bool fresh) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) {
        closeSocket(fd);
        return;
      }
      if (parked_.size() >= capacity_) {
        // A connection that never sent a byte goes first (the oldest of
        // them): a flood of silent sockets must not push out a client
        // that has been served and is inside its idle timeout.
        auto evicted = std::min_element(
            parked_.begin(), parked_.end(), [](const Guest &a, const Guest &b) {
              if (a.fresh != b.fresh)
                return a.fresh;
              return a.until < b.until;
            });
        closeSocket(evicted->fd);
        parked_.erase(evicted);
      }
      parked_.push_back({fd, served, deadline, fresh, nextId_++});
    }
    wake();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_)
        return;
      stopped_ = true;
    }
    wake();
    if (thread_.joinable())
      thread_.join();
    for (const Guest &g : parked_)
      closeSocket(g.fd);
    parked_.clear();
    for (int fd : wake_)
      if (fd >= 0)
        ::close(fd);
  }

private:
  struct Guest {
    int fd;
    int served;
    Clock::time_point until;
    bool fresh;
    /// Which guest: a closed socket's number is soon another's.
    uint64_t id;
  };

  static void closeSocket(int fd) {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  void wake() {
    const char c = 0;
    if (wake_[1] >= 0)
      (void)!::write(wake_[1], &c, 1);
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<Guest> guests;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopped_)
          return;
        guests = parked_;
      }
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      Clock::time_point next = Clock::now() + std::chrono::seconds(1);
      for (const Guest &g : guests) {
        fds.push_back(pollfd{g.fd, short(POLLIN | POLLRDHUP), 0});
        next = std::min(next, g.until);
      }
      const long long ms = std::max<long long>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(
                 next - Clock::now())
                     .count() +
                 1);
      if (::poll(fds.data(), fds.size(), int(std::min(ms, 1000LL))) < 0 &&
          errno != EINTR)
        continue;
      if (fds[0].revents & POLLIN) {
        char drain[64];
        while (::read(wake_[0], drain, sizeof drain) == sizeof drain) {
        }
      }
      const Clock::time_point now = Clock::now();
      std::vector<Guest> leaving;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = 0; i < guests.size(); ++i) {
          const Guest &g = guests[i];
          const bool readable = fds[i + 1].revents != 0;
          if (!readable && g.until > now)
            continue;
          // Still here (not pushed out by a newer guest meanwhile)?
          auto it = std::find_if(parked_.begin(), parked_.end(),
                                 [&](const Guest &p) { return p.id == g.id; });
          if (it == parked_.end())
            continue;
          parked_.erase(it);
          leaving.push_back(g);
          if (!readable)
            leaving.back().served = -1; // expired
        }
      }
      for (const Guest &g : leaving) {
        if (g.served < 0)
          closeSocket(g.fd);
        else
          ready_(g.fd, g.served,
                 g.fresh ? g.until
                         : now + std::chrono::seconds(requestTimeout_));
      }
    }
  }

  const size_t capacity_;
  const int requestTimeout_;
  Ready ready_;
  int wake_[2] = {-1, -1};
  std::mutex mutex_;
  std::vector<Guest> parked_;
  uint64_t nextId_ = 0;
  bool stopped_ = false;
  std::thread thread_;
};

/// Runs each job where it is queued: httplib's accept loop hands every
/// socket straight to the waiting room (Server::Impl::Http).
class InlineQueue : public httplib::TaskQueue {
public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

/// The connection whose request this thread is handling (handlers get
/// only httplib's Request; the limits live on the connection).
thread_local Connection *tlConnection = nullptr;

bool equalsIgnoringCase(const std::string &a, const char *b) {
  size_t n = std::strlen(b);
  if (a.size() != n)
    return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i]))
      return false;
  return true;
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

/// Why a request's framing is refused before its body is read, or empty:
/// conflicting or malformed Content-Length, Content-Length together with
/// Transfer-Encoding (request smuggling), a coding other than chunked, a
/// declared body over the limit, multipart bodies.
std::optional<ApiError> framingError(const httplib::Request &req,
                                     size_t maxBody) {
  auto range = req.headers.equal_range("Content-Length");
  std::optional<uint64_t> length;
  for (auto it = range.first; it != range.second; ++it) {
    const std::string &v = it->second;
    uint64_t n = 0;
    bool digits = !v.empty() && v.size() <= 19 &&
                  std::all_of(v.begin(), v.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (digits)
      n = std::stoull(v);
    if (!digits || (length && *length != n))
      return apiError(400, "invalid_content_length",
                      "the request has a malformed or conflicting "
                      "Content-Length");
    length = n;
  }
  if (req.has_header("Transfer-Encoding")) {
    if (length)
      return apiError(400, "invalid_content_length",
                      "the request has both Content-Length and "
                      "Transfer-Encoding");
    if (req.get_header_value_count("Transfer-Encoding") != 1 ||
        !equalsIgnoringCase(req.get_header_value("Transfer-Encoding"),
                            "chunked"))
      return apiError(501, "unsupported_transfer_encoding",
                      "only Transfer-Encoding: chunked is supported");
  }
  if (length && *length > maxBody)
    return apiError(413, "request_too_large",
                    "the request body is larger than " +
                        std::to_string(maxBody) + " bytes");
  if (req.is_multipart_form_data())
    return apiError(415, "unsupported_media_type",
                    "multipart bodies are not accepted; send JSON");
  return std::nullopt;
}

/// A decoding's text and its length in characters, piece by piece.
class PieceDecoder : public TextDecoder {
public:
  int64_t push(int32_t id) override {
    const int64_t start = chars_;
    const std::string piece = next(id);
    chars_ += characters(piece);
    text_ += piece;
    return start;
  }
  std::string finish() override { return text_ + rest(); }

protected:
  /// The text `id` adds, and what is held back at the end.
  virtual std::string next(int32_t id) = 0;
  virtual std::string rest() { return {}; }

private:
  std::string text_;
  int64_t chars_ = 0;
};

/// A tokenizer's decoding (TextStream: the few ids since the text last came
/// out whole are decoded again, not the whole text).
class StreamDecoder : public PieceDecoder {
public:
  explicit StreamDecoder(const Tokenizer &tokenizer) : stream_(tokenizer) {}

private:
  std::string next(int32_t id) override { return stream_.push(id); }
  std::string rest() override { return stream_.finish(); }
  TextStream stream_;
};

/// Token texts one after another (backends without a tokenizer).
class ConcatenatingDecoder : public PieceDecoder {
public:
  explicit ConcatenatingDecoder(const Backend &backend) : backend_(backend) {}

private:
  std::string next(int32_t id) override { return backend_.tokenText(id); }
  const Backend &backend_;
};

/// The backend over a real model and session.
class ModelBackend : public Backend {
public:
  ModelBackend(exec::Session &session, const exec::Model &model,
               const Tokenizer &tokenizer, const app::ChatFormat &format,
               int parallel)
      : session_(session), tokenizer_(tokenizer), format_(format),
        bos_(model.bosToken()), vocab_(model.vocabSize()),
        chat_(session, tokenizer, format) {
    if (parallel > 1)
      engine_ = std::make_unique<BatchEngine>(session, tokenizer,
                                              format.endOfTurn(), parallel);
    for (int32_t id : model.eosTokens())
      stop_.insert(id);
    // A token spells at most its piece's bytes (with slack for the
    // normalizer): longer text cannot fit the context, and is refused
    // before it is tokenized.
    maxTextBytes_ = tokenizer.maxTextBytes(session.capacity());
  }

  int64_t capacity() const override { return session_.capacity(); }
  std::set<int32_t> stopTokens() const override { return stop_; }

  std::shared_ptr<grammar::JsonConstraint>
  jsonConstraint(std::shared_ptr<const grammar::Schema> schema,
                 std::string *error) override {
    std::set<int32_t> ends = stop_;
    ends.insert(format_.endOfTurn());
    return app::makeJsonConstraint(std::move(schema), vocabulary_.get(), ends,
                                   error);
  }

  bool promptIds(const GenerationRequest &request, std::vector<int32_t> *ids,
                 ApiError *error) override {
    std::string why;
    if (!request.promptIsTokens && !fits(request, error))
      return false;
    if (request.chat) {
      if (!format_.render(request.messages, true, ids, &why)) {
        error->message = why;
        error->param = "messages";
        return false;
      }
      return true;
    }
    if (request.promptIsTokens) {
      for (int32_t id : request.promptTokens)
        if (id >= vocab_) {
          error->message = "token id " + std::to_string(id) +
                           " is outside the vocabulary of " +
                           std::to_string(vocab_);
          error->param = "prompt";
          return false;
        }
      *ids = request.promptTokens;
      return true;
    }
    if (bos_ >= 0)
      ids->push_back(bos_);
    std::vector<int32_t> text;
    if (!tokenizer_.encode(request.prompt, &text, &why)) {
      error->message = why;
      error->param = "prompt";
      return false;
    }
    ids->insert(ids->end(), text.begin(), text.end());
    return true;
  }

  bool shiftedPromptIds(const GenerationRequest &request, int64_t budget,
                        std::vector<int32_t> *ids, ApiError *error) override {
    // One pass, each kept message tokenized once (ChatFormat::renderFitting):
    // no length check before it, since what is dropped is never read.
    std::string why;
    size_t dropped = 0;
    if (!format_.renderFitting(request.messages, true, budget, ids, &dropped,
                               &why)) {
      error->message = why;
      error->param = "messages";
      return false;
    }
    return true;
  }

  bool complete(const std::vector<int32_t> &prompt,
                const app::ReplyOptions &options, app::Reply *reply,
                std::string *error) override {
    if (engine_)
      return engine_->complete(prompt, options, reply, error);
    // One request at a time (the server's gate): the counters are ours.
    bool ok = chat_.complete(prompt, options, reply, error);
    std::lock_guard<std::mutex> lock(statsMutex_);
    stats_.slots = 1;
    if (ok) {
      stats_.generatedTokens += int64_t(reply->tokens.size());
      stats_.promptTokens += int64_t(reply->fed.size());
      stats_.reusedTokens += reply->reusedTokens;
      // Every reply token but the first comes from a decode step (several
      // from one when drafts are accepted).
      const int64_t decoded =
          std::max<int64_t>(0, int64_t(reply->tokens.size()) - 1);
      stats_.decodeSteps +=
          options.draftTokens > 0 ? reply->draft.steps : decoded;
      stats_.stepRows += decoded;
      stats_.draftedTokens += reply->draft.drafted;
      stats_.acceptedTokens += reply->draft.accepted;
      stats_.busySeconds += reply->promptSeconds + reply->replySeconds;
    }
    return ok;
  }

  bool start(std::string *error) override {
    return !engine_ || engine_->start(error);
  }

  std::string tokenText(int32_t id) const override {
    return app::tokenBytes(tokenizer_, id);
  }

  std::unique_ptr<TextDecoder> textDecoder() const override {
    return std::make_unique<StreamDecoder>(tokenizer_);
  }

  std::vector<int64_t> promptTextStarts(const GenerationRequest &request,
                                        const std::vector<int32_t> &ids) override {
    // The encoder's spans in the text as sent; BOS (prepended) spans nothing.
    std::vector<int32_t> text;
    std::vector<size_t> byteStarts;
    std::string why;
    const size_t bos = bos_ >= 0 && !ids.empty() && ids[0] == bos_ ? 1 : 0;
    if (request.chat || request.promptIsTokens ||
        !tokenizer_.encode(request.prompt, &text, &byteStarts, &why) ||
        text.size() + bos != ids.size() ||
        !std::equal(text.begin(), text.end(), ids.begin() + long(bos)))
      return Backend::promptTextStarts(request, ids);
    std::vector<int64_t> starts(bos, 0);
    int64_t chars = 0;
    size_t counted = 0;
    for (size_t begin : byteStarts) {
      // Back to the start of the character the span begins in.
      while (begin > 0 && (uint8_t(request.prompt[begin]) & 0xC0) == 0x80)
        --begin;
      for (; counted < begin; ++counted)
        chars += (uint8_t(request.prompt[counted]) & 0xC0) != 0x80;
      starts.push_back(chars);
    }
    return starts;
  }

  EngineStats stats() const override {
    if (engine_)
      return engine_->stats();
    std::lock_guard<std::mutex> lock(statsMutex_);
    EngineStats s = stats_;
    s.slots = 1;
    return s;
  }

private:
  bool fits(const GenerationRequest &request, ApiError *error) const {
    uint64_t bytes = request.prompt.size();
    for (const app::ChatMessage &m : request.messages)
      bytes += m.content.size() + m.role.size();
    if (bytes <= maxTextBytes_)
      return true;
    error->message = "the prompt's " + std::to_string(bytes) +
                     " bytes cannot fit this model's context of " +
                     std::to_string(session_.capacity()) + " tokens";
    error->param = request.chat ? "messages" : "prompt";
    error->code = "context_length_exceeded";
    return false;
  }

  exec::Session &session_;
  const Tokenizer &tokenizer_;
  app::StructuredVocabulary vocabulary_{tokenizer_};
  const app::ChatFormat &format_;
  int32_t bos_;
  int64_t vocab_;
  std::set<int32_t> stop_;
  uint64_t maxTextBytes_;
  app::ChatSession chat_;
  /// With parallel > 1: replies decoded together over several slots.
  std::unique_ptr<BatchEngine> engine_;
  mutable std::mutex statsMutex_;
  EngineStats stats_;
};

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
    if (!options.apiKey.empty() && req.path.rfind("/v1/", 0) == 0 &&
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

  /// Whether a request's prompts (`prompts`, with reply budgets
  /// `budgets`) are within the server's per-request budgets: its tokens in
  /// all, and the prompt tokens it has scored (echo with logprobs: each a
  /// row of the head over the whole vocabulary).
  bool withinRequestBudget(const GenerationRequest &request,
                           const std::vector<std::vector<int32_t>> &prompts,
                           const std::vector<int64_t> &budgets,
                           ApiError *error) const {
    int64_t total = 0, scored = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      total += int64_t(prompts[i].size()) + budgets[i];
      if (request.echo && request.logprobs)
        scored += int64_t(prompts[i].size());
    }
    const RequestLimits &limits = options.limits;
    const char *param = request.chat ? "messages" : "prompt";
    if (total > limits.maxRequestTokens) {
      *error = apiError(400, "request_too_large",
                        "the request needs " + std::to_string(total) +
                            " tokens (prompts and replies of its " +
                            std::to_string(prompts.size()) +
                            " choices); this server allows at most " +
                            std::to_string(limits.maxRequestTokens) +
                            " per request (--max-request-tokens)");
      error->param = param;
      return false;
    }
    if (scored > limits.maxScoredTokens) {
      *error = apiError(400, "request_too_large",
                        "the request asks to score " + std::to_string(scored) +
                            " prompt tokens (echo with logprobs); this server "
                            "scores at most " +
                            std::to_string(limits.maxScoredTokens) +
                            " per request (--max-scored-tokens)");
      error->param = "echo";
      return false;
    }
    return true;
  }

  /// The prompt's token ids, and the reply budget.
  bool prepare(const GenerationRequest &request, std::vector<int32_t> *ids,
               int64_t *maxTokens, ApiError *error) {
    // --context-shift: a conversation too long for the context loses its
    // oldest exchanges after the first user message (and the system
    // message before it) until it fits with the reply's tokens; it is
    // shifted before anything refuses its length.
    if (options.contextShift && request.chat) {
      // Without max_tokens a chat's reply may take what the context has
      // left: at least one token must fit.
      const int64_t reply = request.maxTokens ? *request.maxTokens : 1;
      if (!backend.shiftedPromptIds(request, backend.capacity() - reply, ids,
                                    error))
        return false;
    } else if (!backend.promptIds(request, ids, error)) {
      return false;
    }
    if (ids->empty()) {
      error->message = "the prompt is empty";
      error->param = "prompt";
      return false;
    }
    const int64_t context = backend.capacity();
    const int64_t promptTokens = int64_t(ids->size());
    *maxTokens = request.maxTokens ? *request.maxTokens
                 : request.chat
                     ? std::min(options.limits.maxTokens,
                                std::max<int64_t>(1, context - promptTokens))
                     : std::min<int64_t>(16, options.limits.maxTokens);
    // The prompt fills positions 0..P-1; every reply token but the last is
    // fed back, so P + max_tokens - 1 positions are needed (P without a
    // reply).
    const int64_t needed = promptTokens + std::max<int64_t>(*maxTokens, 1) - 1;
    if (needed > context) {
      error->message = "this model's context holds " + std::to_string(context) +
                       " tokens; the request needs " +
                       std::to_string(needed) + " (" +
                       std::to_string(promptTokens) + " in the prompt, " +
                       std::to_string(*maxTokens) +
                       " for the reply, the last one not stored)";
      error->param = request.chat ? "messages" : "prompt";
      error->code = "context_length_exceeded";
      return false;
    }
    return true;
  }

  /// A scored token's entry, its alternatives' texts looked up.
  TokenScore tokenScore(const app::TokenLogprob &score) const {
    TokenScore t;
    t.bytes = backend.tokenText(score.token);
    t.logprob = score.logprob;
    for (const auto &[id, logprob] : score.top)
      t.top.push_back({backend.tokenText(id), logprob});
    return t;
  }

  /// Entries of the reply's tokens [from, to) (of those that spell its
  /// text), their offsets from `decoder`, which has read the tokens before
  /// `from`, plus `base` characters.
  std::vector<TokenScore> replyScores(const app::Reply &reply, size_t from,
                                      size_t to, int64_t base,
                                      TextDecoder &decoder) const {
    std::vector<TokenScore> out;
    for (size_t i = from; i < to; ++i) {
      const int64_t start = decoder.push(reply.tokens[i]);
      if (i >= reply.logprobs.size())
        continue;
      out.push_back(tokenScore(reply.logprobs[i]));
      out.back().offset = base + start;
    }
    return out;
  }

  json logprobsOf(const GenerationRequest &request,
                  const std::vector<TokenScore> &scores) const {
    return request.chat ? chatLogprobs(scores) : completionLogprobs(scores);
  }

  /// A complete response's choice: the text (after the echoed prompt)
  /// and, when asked, its logprobs (the echoed prompt's tokens first).
  ChoiceResult choiceResult(const GenerationRequest &request,
                            const std::vector<int32_t> &prompt,
                            const app::Reply &reply) const {
    ChoiceResult choice;
    choice.reply = &reply;
    std::vector<TokenScore> scores;
    if (request.echo) {
      // A text prompt is echoed as it was sent, its offsets in that text;
      // token ids, as they decode.
      std::vector<int64_t> starts;
      if (request.promptIsTokens) {
        choice.text = backend.decodeText(prompt, &starts);
      } else {
        choice.text = request.prompt;
        if (request.logprobs)
          starts = backend.promptTextStarts(request, prompt);
      }
      for (size_t i = 0; request.logprobs && i < prompt.size(); ++i) {
        TokenScore t;
        if (i == 0)
          t.bytes = backend.tokenText(prompt[0]);
        else if (i - 1 < reply.promptLogprobs.size())
          t = tokenScore(reply.promptLogprobs[i - 1]);
        t.offset = i < starts.size() ? starts[i] : 0;
        scores.push_back(std::move(t));
      }
    }
    const int64_t base = characters(choice.text);
    choice.text += reply.text;
    if (request.logprobs) {
      std::unique_ptr<TextDecoder> decoder = backend.textDecoder();
      std::vector<TokenScore> generated =
          replyScores(reply, 0, reply.textTokens, base, *decoder);
      scores.insert(scores.end(), generated.begin(), generated.end());
      choice.logprobs = logprobsOf(request, scores);
    }
    return choice;
  }

  void generate(const httplib::Request &, const std::string &body,
                httplib::Response &res, bool isChat) {
    ApiError error;
    std::optional<GenerationRequest> request =
        parseRequest(body, isChat, options.limits, &error);
    if (!request)
      return sendError(res, error);
    if (!request->model.empty() && request->model != options.modelName)
      return sendError(res, unknownModel(request->model));
    // Completions with a list of prompts: one choice each. The others are
    // moved out first, so that each choice's copy holds its own prompt only
    // (copying the list into every choice grew with its square).
    std::vector<CompletionPrompt> more = std::move(request->morePrompts);
    request->morePrompts.clear();
    std::vector<GenerationRequest> choices;
    choices.reserve(1 + more.size());
    choices.push_back(*request);
    for (CompletionPrompt &p : more) {
      GenerationRequest one = *request;
      one.prompt = std::move(p.text);
      one.promptTokens = std::move(p.tokens);
      one.promptIsTokens = p.isTokens;
      choices.push_back(std::move(one));
    }
    more.clear();
    // Every prompt is encoded, and the whole request's cost checked, before
    // any is generated.
    std::vector<std::vector<int32_t>> prompts(choices.size());
    std::vector<int64_t> budgets(choices.size());
    for (size_t i = 0; i < choices.size(); ++i)
      if (!prepare(choices[i], &prompts[i], &budgets[i], &error))
        return sendError(res, error);
    if (!withinRequestBudget(*request, prompts, budgets, &error))
      return sendError(res, error);
    const std::vector<int32_t> &prompt = prompts[0];
    const int64_t maxTokens = budgets[0];

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
    reply.draftTokens = options.draftTokens;
    reply.stopTokens = stopTokens;
    reply.stopStrings = request->stop;
    reply.topLogprobs = request->logprobs ? request->topLogprobs : -1;
    reply.scorePrompt = request->echo && request->logprobs;
    if (request->schema) {
      // Structured output (chat: one choice). Refused before the request
      // waits when the vocabulary cannot spell what the schema may need.
      std::string why;
      reply.constraint = backend.jsonConstraint(request->schema, &why);
      if (!reply.constraint) {
        ApiError refusal = apiError(400, "invalid_value", why);
        refusal.param = "response_format";
        return sendError(res, refusal);
      }
    }

    // A streamed reply notices a client that left when a write fails; a
    // complete one is watched while it generates.
    std::function<bool()> gone;
    if (Connection *conn = tlConnection; conn && !request->stream)
      gone = [conn] { return conn->clientGone(); };

    if (!request->stream) {
      std::vector<app::Reply> results(choices.size());
      std::vector<ChoiceResult> out;
      for (size_t i = 0; i < choices.size(); ++i) {
        // Each prompt waits for a turn of its own: the requests that came
        // meanwhile go in between a long list's prompts, which cannot hold
        // a slot for all of them.
        std::shared_ptr<Turn> turn =
            waitForTurn(&error, gone, /*admittedBefore=*/i > 0);
        if (!turn)
          return sendError(res, error);
        app::ReplyOptions options = reply;
        options.maxTokens = budgets[i];
        options.interrupt = &turn->cancel;
        std::string why;
        if (!backend.complete(prompts[i], options, &results[i], &why))
          return sendError(res, apiError(500, "", why));
        out.push_back(choiceResult(choices[i], prompts[i], results[i]));
        // A client that left ends the rest too.
        if (turn->cancel.load())
          break;
      }
      return sendJson(res, 200, completionResponse(*request, ids, out));
    }

    std::shared_ptr<Turn> turn =
        waitForTurn(&error, std::move(gone), /*admittedBefore=*/false);
    if (!turn)
      return sendError(res, error);
    reply.interrupt = &turn->cancel;

    auto shared = std::make_shared<GenerationRequest>(*request);
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream", [this, shared, ids, prompt, reply,
                              turn](size_t, httplib::DataSink &sink) {
          bool first = true;
          app::ReplyOptions options = reply;
          bool gone = false;
          app::Reply result;
          // Tokens whose entries went out: each chunk carries those of the
          // tokens behind its text (Reply::textTokens), their offsets from
          // one decoder that reads each token once.
          size_t scored = 0;
          std::unique_ptr<TextDecoder> decoder = backend.textDecoder();
          auto scores = [&]() -> json {
            if (!shared->logprobs)
              return nullptr;
            const size_t to = result.textTokens;
            std::vector<TokenScore> entries =
                replyScores(result, scored, to, 0, *decoder);
            scored = to;
            return logprobsOf(*shared, entries);
          };
          options.onText = [&](const std::string &text) {
            if (gone)
              return;
            std::string data =
                event(streamChunk(*shared, ids, text, first, nullptr, scores()));
            first = false;
            // A client that went away ends the reply.
            if (!sink.is_writable() || !sink.write(data.data(), data.size())) {
              gone = true;
              turn->cancel.store(true);
            }
          };
          std::string why;
          bool ok = backend.complete(prompt, options, &result, &why);
          std::string tail;
          if (!ok) {
            tail = event(errorBody(apiError(500, "", why)));
          } else {
            // Tokens that added no text at the end (and, with no text at
            // all, the role, which comes first) still get a chunk.
            if (first || (shared->logprobs && scored < result.textTokens))
              tail += event(
                  streamChunk(*shared, ids, "", first, nullptr, scores()));
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
               const Tokenizer &tokenizer, const app::ChatFormat &format,
               const ServeOptions &options) {
  auto backend = std::make_unique<ModelBackend>(session, model, tokenizer,
                                                format, options.parallel);
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
          logLine("pccx-serve: " + logSafe(req.remote_addr) + " " +
                  logSafe(req.method) + " " + logSafe(req.path) + " " +
                  std::to_string(res.status) + "\n");
        });
  s.modelRoutes();
}

Server::~Server() = default;

bool Server::start(std::string *error) { return impl_->backend.start(error); }

std::shared_ptr<grammar::JsonConstraint>
Backend::jsonConstraint(std::shared_ptr<const grammar::Schema>,
                        std::string *error) {
  *error = "this server's model has no tokenizer to constrain replies with";
  return nullptr;
}

std::unique_ptr<TextDecoder> Backend::textDecoder() const {
  return std::make_unique<ConcatenatingDecoder>(*this);
}

std::vector<int64_t>
Backend::promptTextStarts(const GenerationRequest &,
                          const std::vector<int32_t> &ids) {
  std::vector<int64_t> starts;
  (void)decodeText(ids, &starts);
  return starts;
}

std::string Backend::decodeText(const std::vector<int32_t> &ids,
                                std::vector<int64_t> *starts) const {
  std::unique_ptr<TextDecoder> decoder = textDecoder();
  for (int32_t id : ids)
    starts->push_back(decoder->push(id));
  return decoder->finish();
}

bool Backend::shiftedPromptIds(const GenerationRequest &request,
                               int64_t budget, std::vector<int32_t> *ids,
                               ApiError *error) {
  GenerationRequest shorter = request;
  const size_t keep =
      !shorter.messages.empty() && shorter.messages[0].role == "system" ? 2
                                                                        : 1;
  for (;;) {
    ids->clear();
    if (!promptIds(shorter, ids, error))
      return false;
    if (int64_t(ids->size()) <= budget || shorter.messages.size() < keep + 3)
      return true;
    // A user message and the reply after it; the roles alternate.
    shorter.messages.erase(shorter.messages.begin() + long(keep),
                           shorter.messages.begin() + long(keep + 2));
  }
}

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
