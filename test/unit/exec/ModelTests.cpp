//===- ModelTests.cpp - opening a bundle for execution --------------------===//
//
// What a session of a model may allocate is known when the bundle is
// opened, and a bundle that needs more than the machine allows is refused
// there, with the figure, instead of failing (or being killed) mid-step.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace pccx;

namespace {

std::string scratch() {
  return testing::TempDir() + "pccx-exec-" + std::to_string(::getpid());
}

struct Cleanup : testing::Environment {
  void TearDown() override {
    (void)std::system(("rm -rf " + scratch()).c_str());
  }
};
testing::Environment *const cleanup =
    testing::AddGlobalTestEnvironment(new Cleanup);

/// The tiny model with attention on the NPU: host caches are absent, its
/// KV record caches and masks are what a session allocates.
const std::string &tinyBundle() {
  static const std::string path = [] {
    std::string dir = PCCX_BIN_DIR, tmp = scratch();
    std::string cmd = "mkdir -p " + tmp + " && " + dir +
                      "/pccx-make-checkpoint --preset tiny -o " + tmp +
                      "/ckpt >/dev/null && " + dir + "/pccx-compile " + tmp +
                      "/ckpt --max-seq-len 64 -o " + tmp + "/tiny.pccx";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return tmp + "/tiny.pccx";
  }();
  return path;
}

} // namespace

TEST(ModelLoad, DefaultLimitIsThePhysicalMemoryCappedByTheRuntime) {
  const uint64_t limit = exec::Model::defaultHostMemoryLimit();
  const uint64_t physical =
      uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(limit, std::min(physical, exec::Model::kMaxSessionBytes));
}

TEST(ModelLoad, SessionBytesCoverCachesRecordsMasksAndLogits) {
  std::string error;
  auto model = exec::Model::load(tinyBundle(), &error);
  ASSERT_TRUE(model) << error;
  uint64_t floor = 0;
  for (const exec::CacheSpec &c : model->caches()) {
    EXPECT_TRUE(c.records()) << c.name;
    // The exact f32 shadow alone; records and masks come on top.
    floor += uint64_t(c.slots) * uint64_t(c.width) * 4;
  }
  floor += uint64_t(model->vocabSize()) * 4;
  EXPECT_GT(model->sessionHostBytes(), floor);
}

TEST(ModelLoad, RefusedExactlyAboveTheLimit) {
  std::string error;
  auto model = exec::Model::load(tinyBundle(), &error);
  ASSERT_TRUE(model) << error;
  const uint64_t need = model->sessionHostBytes();

  EXPECT_TRUE(exec::Model::load(tinyBundle(), &error, need)) << error;
  error.clear();
  EXPECT_FALSE(exec::Model::load(tinyBundle(), &error, need - 1));
  EXPECT_NE(error.find(tinyBundle() + ": the KV caches and logits need " +
                       std::to_string(need) + " bytes"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(" + std::to_string(need - 1) + " bytes)"),
            std::string::npos)
      << error;
}

TEST(ModelLoad, ACacheAloneAboveTheLimitIsNamed) {
  std::string error;
  auto model = exec::Model::load(tinyBundle(), &error);
  ASSERT_TRUE(model) << error;
  const exec::CacheSpec &first = model->caches().front();
  EXPECT_FALSE(exec::Model::load(tinyBundle(), &error, 1));
  EXPECT_NE(error.find("KV cache '" + first.name + "' (" +
                       std::to_string(first.slots) + " x " +
                       std::to_string(first.width) + ") does not fit"),
            std::string::npos)
      << error;
}
