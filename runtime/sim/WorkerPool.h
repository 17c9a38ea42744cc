//===- WorkerPool.h - persistent threads for the simulator's GEMV -*- C++ -*-===//
//
// A GEMV of a decode step lasts tens of microseconds; starting threads for
// each would cost as much as the work, and so would waking a sleeping
// thread (a futex wake takes tens of microseconds to run the worker, during
// which its half of the GEMV waits). The pool keeps its threads parked
// between calls: spinning for a short while after each call, when every
// thread has a core of its own, then sleeping.
//
// fork(): a child process has none of its parent's threads (Python's
// multiprocessing forks by default). A pool used in a child starts workers
// of its own there, and leaves the parent's (their bookkeeping copied into
// the child, possibly mid-call) untouched, never waiting for them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_WORKERPOOL_H
#define PCCX_RUNTIME_SIM_WORKERPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace pccx::sim {

class WorkerPool {
public:
  /// A pool of `threads` - 1 workers plus the calling thread. Fewer workers
  /// are kept if the system refuses to start more.
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  /// Threads that run(): the workers and the caller.
  unsigned threads() const { return unsigned(s_->workers.size()) + 1; }

  /// Calls part(i) for every i < min(parts, threads()), part 0 on the
  /// calling thread, and returns when all calls have returned.
  void run(unsigned parts, const std::function<void(unsigned)> &part);

private:
  /// What the workers share with the caller; a child process of a fork
  /// gets a new one (the old one is left as the fork copied it).
  struct Shared {
    std::mutex mutex;
    std::condition_variable wake, finished;
    std::vector<std::thread> workers;
    const std::function<void(unsigned)> *task = nullptr;
    unsigned parts = 0;
    std::atomic<unsigned> pending{0};
    std::atomic<uint64_t> generation{0};
    std::atomic<bool> stopping{false};
    /// Spinning helps only when no thread of the pool waits for a core.
    bool spin = false;
  };
  /// Starts `s_`'s workers in this process.
  void start();
  static void workerLoop(Shared *s, unsigned index);

  unsigned requested_;
  pid_t owner_; ///< the process whose threads `s_` has
  std::unique_ptr<Shared> s_;
};

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_WORKERPOOL_H
