//===- WorkerPoolTests.cpp - the simulator's persistent threads -----------===//

#include "runtime/sim/WorkerPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using pccx::sim::WorkerPool;

namespace {
/// The child's exit status (0..255), or -1 when it did not exit within
/// 10 s (then it is killed).
int exitStatusOf(pid_t child) {
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(child, &status, WNOHANG) == child)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    ::usleep(50 * 1000);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
  return -1;
}
} // namespace

TEST(WorkerPool, EveryPartRunsOnce) {
  WorkerPool pool(4);
  std::atomic<unsigned> mask{0};
  for (int round = 0; round < 100; ++round) {
    mask = 0;
    pool.run(4, [&](unsigned i) { mask.fetch_or(1u << i); });
    EXPECT_EQ(mask.load(), (1u << pool.threads()) - 1);
  }
}

// A child of fork() has none of the parent's threads: its first call starts
// workers of its own, and its exit does not wait for the parent's (both
// used to hang).
TEST(WorkerPool, WorksInAForkedChild) {
  if (std::getenv("PCCX_EMULATED"))
    GTEST_SKIP() << "qemu-user aborts when a forked child starts threads";
  WorkerPool pool(3);
  pool.run(3, [](unsigned) {});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<unsigned> sum{0};
    pool.run(3, [&](unsigned i) { sum += i + 1; });
    // Exits through the pool's destructor as well (quick_exit would skip
    // it): a normal return from a scope.
    {
      WorkerPool unused(2);
    }
    ::_exit(sum == 6 ? 0 : 1);
  }
  const int status = exitStatusOf(child);
  ASSERT_NE(status, -1) << "the child hung";
  EXPECT_EQ(status, 0);
  // The parent's pool is unchanged.
  std::atomic<unsigned> sum{0};
  pool.run(3, [&](unsigned i) { sum += i + 1; });
  EXPECT_EQ(sum.load(), 6u);
}

TEST(WorkerPool, ForkedChildThatNeverRunsItExits) {
  auto pool = std::make_unique<WorkerPool>(3);
  pool->run(3, [](unsigned) {});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pool.reset(); // used to join threads that do not exist here
    ::_exit(0);
  }
  const int status = exitStatusOf(child);
  ASSERT_NE(status, -1) << "the child hung";
  EXPECT_EQ(status, 0);
}
