//===- Transport.h - connections, the idle room, HTTP framing ---*- C++ -*-===//
//
// pccx-serve's transport: each connection is read and written by the
// server's own stream (Connection), which enforces the limits while the
// bytes arrive; sockets with no request to read wait in one polled room
// (WaitingRoom) instead of on a thread; requests whose framing could
// smuggle or overrun are refused before their body is read. Nothing here
// knows the model or the routes (Server.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SERVE_TRANSPORT_H
#define PCCX_RUNTIME_SERVE_TRANSPORT_H

#include "runtime/serve/OpenAiApi.h"

#include <httplib.h>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace pccx::serve {

using Clock = std::chrono::steady_clock;

/// A request's line and headers may take this much besides the body.
constexpr size_t kMaxHeadBytes = 64 << 10;
/// Requests served on one kept-alive connection before it is closed.
constexpr int kMaxRequestsPerConnection = 100;
/// A write that makes no progress for this long fails (a client that
/// stopped reading); once the server is stopping, after one second.
constexpr int kWriteTimeoutSeconds = 30;
/// Waits are cut into slices this long to notice the stop flag.
constexpr int kSliceMs = 100;

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
extern thread_local Connection *tlConnection;

/// ASCII case-insensitive equality (header values, schemes).
bool equalsIgnoringCase(const std::string &a, const char *b);

/// Why a request's framing is refused before its body is read, or empty:
/// conflicting or malformed Content-Length, Content-Length together with
/// Transfer-Encoding (request smuggling), a coding other than chunked, a
/// declared body over the limit, multipart bodies.
std::optional<ApiError> framingError(const httplib::Request &req,
                                     size_t maxBody);

} // namespace pccx::serve

#endif
