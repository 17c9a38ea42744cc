//===- WorkerPool.cpp - persistent threads for the simulator's GEMV -------===//

#include "runtime/sim/WorkerPool.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <pthread.h>
#include <unistd.h>

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

/// Spins until `done()` or the spin budget is spent; whether done.
template <class Done> bool spinUntil(bool spin, Done done) {
  if (!spin)
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

WorkerPool::WorkerPool(unsigned threads)
    : requested_(threads), owner_(::getpid()),
      s_(std::make_unique<Shared>()) {
  start();
}

void WorkerPool::start() {
  // Workers never take a process's signals (a server's SIGTERM goes to the
  // thread that waits for it): they start with every signal blocked.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  for (unsigned i = 1; i < requested_; ++i) {
    try {
      s_->workers.emplace_back(&WorkerPool::workerLoop, s_.get(), i);
    } catch (...) {
      break; // run with the workers that did start
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  s_->spin = threads() <= std::max(1u, std::thread::hardware_concurrency());
}

WorkerPool::~WorkerPool() {
  if (owner_ != ::getpid()) {
    // A forked child that never ran the pool: the workers are the
    // parent's; their copied state (maybe a locked mutex) stays as is.
    (void)s_.release();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s_->mutex);
    s_->stopping = true;
  }
  s_->wake.notify_all();
  for (std::thread &t : s_->workers)
    t.join();
}

void WorkerPool::run(unsigned parts,
                     const std::function<void(unsigned)> &part) {
  if (owner_ != ::getpid()) {
    // The first call in a forked child: workers of its own.
    (void)s_.release();
    s_ = std::make_unique<Shared>();
    owner_ = ::getpid();
    start();
  }
  Shared &s = *s_;
  parts = std::min(parts, threads());
  if (parts > 1) {
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.task = &part;
      s.parts = parts;
      s.pending.store(parts - 1, std::memory_order_relaxed);
      s.generation.fetch_add(1, std::memory_order_release);
    }
    s.wake.notify_all();
  }
  if (parts > 0)
    part(0);
  if (parts > 1) {
    auto finished = [&] {
      return s.pending.load(std::memory_order_acquire) == 0;
    };
    if (!spinUntil(s.spin, finished)) {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.finished.wait(lock, finished);
    }
    std::lock_guard<std::mutex> lock(s.mutex);
    s.task = nullptr;
  }
}

void WorkerPool::workerLoop(Shared *s, unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    auto called = [&] {
      return s->stopping.load(std::memory_order_acquire) ||
             s->generation.load(std::memory_order_acquire) != seen;
    };
    if (!spinUntil(s->spin, called)) {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->wake.wait(lock, called);
    }
    if (s->stopping.load(std::memory_order_acquire))
      return;
    const std::function<void(unsigned)> *task;
    unsigned parts;
    {
      // task and parts were written before the generation changed.
      std::lock_guard<std::mutex> lock(s->mutex);
      seen = s->generation.load(std::memory_order_relaxed);
      task = s->task;
      parts = s->parts;
    }
    if (index >= parts || !task)
      continue;
    (*task)(index);
    if (s->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->finished.notify_one();
    }
  }
}

} // namespace pccx::sim
