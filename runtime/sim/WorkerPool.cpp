//===- WorkerPool.cpp - persistent threads for the simulator's GEMV -------===//

#include "runtime/sim/WorkerPool.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pccx::sim {

namespace {

/// How long a thread spins for the next call (or the last part) before it
/// sleeps: longer than the host kernels between two GEMVs of a step.
constexpr std::chrono::microseconds kSpinBudget(300);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

} // namespace

WorkerPool::WorkerPool(unsigned threads) {
  // Workers never take a process's signals (a server's SIGTERM goes to the
  // thread that waits for it): they start with every signal blocked.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  for (unsigned i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back(&WorkerPool::workerLoop, this, i);
    } catch (...) {
      break; // run with the workers that did start
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  spin_ = this->threads() <= std::max(1u, std::thread::hardware_concurrency());
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

template <class Done> bool WorkerPool::spinUntil(Done done) const {
  if (!spin_)
    return done();
  const auto deadline = std::chrono::steady_clock::now() + kSpinBudget;
  for (unsigned i = 1;; ++i) {
    if (done())
      return true;
    cpuRelax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline)
        return done();
      // Another process's thread that wants this core gets it.
      std::this_thread::yield();
    }
  }
}

void WorkerPool::run(unsigned parts,
                     const std::function<void(unsigned)> &part) {
  parts = std::min(parts, threads());
  if (parts > 1) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = &part;
      parts_ = parts;
      pending_.store(parts - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
  }
  if (parts > 0)
    part(0);
  if (parts > 1) {
    auto finished = [&] {
      return pending_.load(std::memory_order_acquire) == 0;
    };
    if (!spinUntil(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      finished_.wait(lock, finished);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = nullptr;
  }
}

void WorkerPool::workerLoop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    auto called = [&] {
      return stopping_.load(std::memory_order_acquire) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spinUntil(called)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, called);
    }
    if (stopping_.load(std::memory_order_acquire))
      return;
    const std::function<void(unsigned)> *task;
    unsigned parts;
    {
      // task_ and parts_ were written before the generation changed.
      std::lock_guard<std::mutex> lock(mutex_);
      seen = generation_.load(std::memory_order_relaxed);
      task = task_;
      parts = parts_;
    }
    if (index >= parts || !task)
      continue;
    (*task)(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.notify_one();
    }
  }
}

} // namespace pccx::sim
