//===- CApiTests.cpp - libpccxrt from C -----------------------------------===//

#include "runtime/capi/pccxrt.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>
#include <string>
#include <vector>

namespace {

std::string scratch() {
  return testing::TempDir() + "pccxrt-capi-" + std::to_string(::getpid());
}

/// Removes the scratch directory when the tests end.
struct Cleanup : testing::Environment {
  void TearDown() override {
    (void)std::system(("rm -rf " + scratch()).c_str());
  }
};
testing::Environment *const cleanup =
    testing::AddGlobalTestEnvironment(new Cleanup);

/// A tiny bundle built by the tools in the build tree.
std::string tinyBundle() {
  static std::string path;
  if (!path.empty())
    return path;
  std::string dir = PCCX_BIN_DIR;
  std::string tmp = scratch();
  std::string cmd = "rm -rf " + tmp + " && " + dir +
                    "/pccx-make-checkpoint --preset tiny -o " + tmp +
                    "/ckpt && " + dir + "/pccx-compile " + tmp +
                    "/ckpt --max-seq-len 32 -o " + tmp + "/tiny.pccx";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  path = tmp + "/tiny.pccx";
  return path;
}

} // namespace

TEST(CApi, OpenConsumeSample) {
  pccxrt_model *m = pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                                PCCXRT_NUMERICS_REFERENCE);
  ASSERT_NE(m, nullptr) << pccxrt_last_error(nullptr);
  EXPECT_EQ(pccxrt_vocab_size(m), 512);
  EXPECT_EQ(pccxrt_capacity(m), 32);
  std::vector<int32_t> prompt = {2, 100, 400};
  std::vector<float> logits(3 * 512);
  ASSERT_EQ(pccxrt_consume(m, prompt.data(), prompt.size(), 0, logits.data()),
            0)
      << pccxrt_last_error(m);
  EXPECT_EQ(pccxrt_position(m), 3);

  // Prefill and token-by-token agree.
  std::vector<float> again(3 * 512);
  ASSERT_EQ(pccxrt_reset(m), 0);
  ASSERT_EQ(pccxrt_consume(m, prompt.data(), prompt.size(), 1, again.data()),
            0);
  for (size_t i = 0; i < logits.size(); ++i)
    ASSERT_NEAR(logits[i], again[i], 1e-4f);

  pccxrt_sampling greedy = {0.0, 0, 1.0, 1.0, 0};
  int32_t token = -1;
  std::vector<float> last(logits.end() - 512, logits.end());
  ASSERT_EQ(pccxrt_sample(m, &greedy, last.data(), prompt.data(),
                          prompt.size(), &token),
            0);
  int32_t best = 0;
  for (int32_t i = 1; i < 512; ++i)
    if (logits[2 * 512 + size_t(i)] > logits[2 * 512 + size_t(best)])
      best = i;
  EXPECT_EQ(token, best);

  // Errors are values with a message.
  int32_t bad = 9999;
  EXPECT_LT(pccxrt_consume(m, &bad, 1, 0, nullptr), 0);
  EXPECT_NE(std::string(pccxrt_last_error(m)).find("outside the vocabulary"),
            std::string::npos);
  pccxrt_sampling wrong = {-1.0, 0, 1.0, 1.0, 0};
  EXPECT_LT(pccxrt_sample(m, &wrong, last.data(), nullptr, 0, &token), 0);
  pccxrt_close(m);
}

TEST(CApi, OpenErrors) {
  EXPECT_EQ(pccxrt_open("/nonexistent.pccx", PCCXRT_DEVICE_SIM,
                        PCCXRT_NUMERICS_HARDWARE),
            nullptr);
  EXPECT_NE(std::string(pccxrt_last_error(nullptr)).find("nonexistent"),
            std::string::npos);
  EXPECT_EQ(pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_KV260,
                        PCCXRT_NUMERICS_REFERENCE),
            nullptr);
  EXPECT_NE(std::string(pccxrt_last_error(nullptr)).find("simulator mode"),
            std::string::npos);
}
