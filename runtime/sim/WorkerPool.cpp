//===- WorkerPool.cpp - persistent threads for the simulator's GEMV -------===//

#include "runtime/sim/WorkerPool.h"

#include <algorithm>

namespace pccx::sim {

WorkerPool::WorkerPool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back(&WorkerPool::workerLoop, this, i);
    } catch (...) {
      break; // run with the workers that did start
    }
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

void WorkerPool::run(unsigned parts,
                     const std::function<void(unsigned)> &part) {
  parts = std::min(parts, threads());
  if (parts > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &part;
      parts_ = parts;
      pending_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
  }
  if (parts > 0)
    part(0);
  if (parts > 1) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return pending_ == 0; });
    task_ = nullptr;
  }
}

void WorkerPool::workerLoop(unsigned index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_)
      return;
    seen = generation_;
    if (index >= parts_)
      continue;
    const std::function<void(unsigned)> *task = task_;
    lock.unlock();
    (*task)(index);
    lock.lock();
    if (--pending_ == 0)
      finished_.notify_one();
  }
}

} // namespace pccx::sim
