//===- WorkerPool.h - persistent threads for the simulator's GEMV -*- C++
//-*-===//
//
// A GEMV of a decode step lasts tens of microseconds; starting threads for
// each would cost as much as the work. The pool keeps its threads parked
// between calls.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_SIM_WORKERPOOL_H
#define PCCX_RUNTIME_SIM_WORKERPOOL_H

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

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(unsigned)> *task_ = nullptr;
  unsigned parts_ = 0;
  unsigned pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

} // namespace pccx::sim

#endif // PCCX_RUNTIME_SIM_WORKERPOOL_H
