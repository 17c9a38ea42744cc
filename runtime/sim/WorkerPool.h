//===- WorkerPool.h - persistent threads for the simulator's GEMV -*- C++ -*-===//
//
// A GEMV of a decode step lasts tens of microseconds; starting threads for
// each would cost as much as the work, and so would waking a sleeping
// thread (a futex wake takes tens of microseconds to run the worker, during
// which its half of the GEMV waits). The pool keeps its threads parked
// between calls: spinning for a short while after each call, when every
// thread has a core of its own, then sleeping.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_WORKERPOOL_H
#define PCCX_RUNTIME_SIM_WORKERPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
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
  unsigned threads() const { return unsigned(workers_.size()) + 1; }

  /// Calls part(i) for every i < min(parts, threads()), part 0 on the
  /// calling thread, and returns when all calls have returned.
  void run(unsigned parts, const std::function<void(unsigned)> &part);

private:
  void workerLoop(unsigned index);
  /// Spins until `done()` or the spin budget is spent; whether done.
  template <class Done> bool spinUntil(Done done) const;

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(unsigned)> *task_ = nullptr;
  unsigned parts_ = 0;
  std::atomic<unsigned> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  /// Spinning helps only when no thread of the pool waits for a core.
  bool spin_ = false;
};

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_WORKERPOOL_H
