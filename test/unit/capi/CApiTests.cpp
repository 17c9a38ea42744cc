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

// Devices by name through the registry: the same session as the enum
// opens, and an unknown device, option or value refused naming it.
TEST(CApi, OpenDeviceByName) {
  const size_t count = pccxrt_device_count();
  ASSERT_GE(count, 2u);
  EXPECT_STREQ(pccxrt_device_name(0), "sim");
  EXPECT_STREQ(pccxrt_device_name(1), "kv260");
  EXPECT_EQ(pccxrt_device_name(count), nullptr);
  EXPECT_NE(std::string(pccxrt_device_description(1)).find("KV260"),
            std::string::npos);
  EXPECT_EQ(pccxrt_device_description(count), nullptr);

  pccxrt_model *byEnum = pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                                     PCCXRT_NUMERICS_REFERENCE);
  pccxrt_model *byName = pccxrt_open_device(tinyBundle().c_str(), "sim",
                                            "numerics=reference,threads=2");
  ASSERT_NE(byEnum, nullptr) << pccxrt_last_error(nullptr);
  ASSERT_NE(byName, nullptr) << pccxrt_last_error(nullptr);
  std::vector<int32_t> prompt = {2, 100, 400};
  std::vector<float> a(3 * 512), b(3 * 512);
  ASSERT_EQ(pccxrt_consume(byEnum, prompt.data(), 3, 0, a.data()), 0);
  ASSERT_EQ(pccxrt_consume(byName, prompt.data(), 3, 0, b.data()), 0);
  EXPECT_EQ(a, b);
  pccxrt_close(byEnum);
  pccxrt_close(byName);
  // Integer numerics (the simulator's fast path) are the default; the
  // enum names each mode.
  pccxrt_model *plain = pccxrt_open_device(tinyBundle().c_str(), "sim", NULL);
  pccxrt_model *integer = pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                                      PCCXRT_NUMERICS_INTEGER);
  pccxrt_model *hardware = pccxrt_open(
      tinyBundle().c_str(), PCCXRT_DEVICE_SIM, PCCXRT_NUMERICS_HARDWARE);
  ASSERT_NE(plain, nullptr) << pccxrt_last_error(nullptr);
  ASSERT_NE(integer, nullptr) << pccxrt_last_error(nullptr);
  ASSERT_NE(hardware, nullptr) << pccxrt_last_error(nullptr);
  std::vector<float> c(3 * 512), d(3 * 512), e(3 * 512);
  ASSERT_EQ(pccxrt_consume(plain, prompt.data(), 3, 0, c.data()), 0);
  ASSERT_EQ(pccxrt_consume(integer, prompt.data(), 3, 0, d.data()), 0);
  ASSERT_EQ(pccxrt_consume(hardware, prompt.data(), 3, 0, e.data()), 0);
  EXPECT_NE(a, c);
  EXPECT_EQ(c, d);
  EXPECT_NE(c, e);
  pccxrt_close(plain);
  pccxrt_close(integer);
  pccxrt_close(hardware);
  EXPECT_EQ(pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                        pccxrt_numerics(9)),
            nullptr);
  EXPECT_STREQ(pccxrt_last_error(nullptr),
               "unknown numerics 9 (PCCXRT_NUMERICS_HARDWARE, _REFERENCE or "
               "_INTEGER)");

  const struct {
    const char *device, *options, *error;
  } refused[] = {
      {"sim", "speed=9", "sim: unknown option 'speed' (its options: numerics "
                         "or threads)"},
      {"sim", "numerics=fast", "sim: option 'numerics' must be integer, "
                               "hardware or reference, not 'fast'"},
      {"sim", "threads", "device option 'threads' is not KEY=VALUE"},
      {"kv260", "numerics=reference",
       "kv260: the board computes in hardware numerics; 'reference' numerics "
       "are a simulator mode"},
  };
  for (const auto &r : refused) {
    EXPECT_EQ(pccxrt_open_device(tinyBundle().c_str(), r.device, r.options),
              nullptr);
    EXPECT_STREQ(pccxrt_last_error(nullptr), r.error);
  }
  EXPECT_EQ(pccxrt_open_device(tinyBundle().c_str(), "gpu", ""), nullptr);
  const std::string unknown = pccxrt_last_error(nullptr);
  EXPECT_EQ(unknown.rfind("unknown device 'gpu' (known: sim", 0), 0u)
      << unknown;
  EXPECT_NE(unknown.find("kv260"), std::string::npos) << unknown;
  EXPECT_EQ(pccxrt_open_device(tinyBundle().c_str(), nullptr, ""), nullptr);
  EXPECT_STREQ(pccxrt_last_error(nullptr), "no device name");
  EXPECT_EQ(pccxrt_open(tinyBundle().c_str(), pccxrt_device(7),
                        PCCXRT_NUMERICS_HARDWARE),
            nullptr);
  EXPECT_STREQ(pccxrt_last_error(nullptr), "unknown device 7");
}

namespace {

/// The tiny bundle with a SentencePiece tokenizer trained for the tests.
std::string tinyBundleWithTokenizer() {
  static std::string path;
  if (!path.empty())
    return path;
  std::string dir = PCCX_BIN_DIR, tmp = scratch();
  tinyBundle(); // creates the scratch checkpoint
  std::string cmd =
      "spm_train --input=" PCCX_SOURCE_DIR
      "/test/tools/pccx-run/Inputs/chat-corpus.txt --model_prefix=" +
      tmp + "/ckpt/tokenizer --vocab_size=512 --model_type=bpe "
            "--hard_vocab_limit=false --pad_id=0 --eos_id=1 --bos_id=2 "
            "--unk_id=3 --minloglevel=2 > /dev/null 2>&1 && " +
      dir + "/pccx-compile " + tmp + "/ckpt --max-seq-len 32 -o " + tmp +
      "/tok.pccx";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  path = tmp + "/tok.pccx";
  return path;
}

} // namespace

TEST(CApi, SpecialTokens) {
  pccxrt_model *m = pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                                PCCXRT_NUMERICS_HARDWARE);
  ASSERT_NE(m, nullptr) << pccxrt_last_error(nullptr);
  EXPECT_EQ(pccxrt_bos_token(m), 2);
  size_t count = 0;
  ASSERT_EQ(pccxrt_eos_tokens(m, nullptr, 0, &count), 0);
  EXPECT_EQ(count, 1u);
  int32_t eos = -1;
  ASSERT_EQ(pccxrt_eos_tokens(m, &eos, 1, &count), 0);
  EXPECT_EQ(eos, 1);
  EXPECT_LT(pccxrt_eos_tokens(m, nullptr, 4, &count), 0);

  // No tokenizer in this bundle: a message, not a crash.
  EXPECT_LT(pccxrt_tokenize(m, "hi", 1, nullptr, 0, &count), 0);
  EXPECT_NE(std::string(pccxrt_last_error(m)).find("carries no tokenizer"),
            std::string::npos);
  pccxrt_close(m);
}

TEST(CApi, TokenizeDetokenize) {
  pccxrt_model *m = pccxrt_open(tinyBundleWithTokenizer().c_str(),
                                PCCXRT_DEVICE_SIM, PCCXRT_NUMERICS_HARDWARE);
  ASSERT_NE(m, nullptr) << pccxrt_last_error(nullptr);
  size_t count = 0;
  ASSERT_EQ(pccxrt_tokenize(m, "Hello there", 1, nullptr, 0, &count), 0)
      << pccxrt_last_error(m);
  ASSERT_GT(count, 1u);
  std::vector<int32_t> ids(count);
  ASSERT_EQ(pccxrt_tokenize(m, "Hello there", 1, ids.data(), ids.size(),
                            &count),
            0);
  EXPECT_EQ(ids[0], 2);
  std::vector<int32_t> small(1);
  EXPECT_LT(pccxrt_tokenize(m, "Hello there", 1, small.data(), 1, &count), 0);
  EXPECT_NE(std::string(pccxrt_last_error(m)).find("the buffer holds 1"),
            std::string::npos);
  size_t withoutBos = 0;
  ASSERT_EQ(pccxrt_tokenize(m, "Hello there", 0, nullptr, 0, &withoutBos), 0);
  EXPECT_EQ(withoutBos + 1, count);

  size_t length = 0;
  ASSERT_EQ(pccxrt_detokenize(m, ids.data() + 1, ids.size() - 1, nullptr, 0,
                              &length),
            0);
  EXPECT_EQ(length, 11u);
  std::vector<char> text(length + 1);
  ASSERT_EQ(pccxrt_detokenize(m, ids.data() + 1, ids.size() - 1, text.data(),
                              text.size(), &length),
            0);
  EXPECT_STREQ(text.data(), "Hello there");
  EXPECT_LT(pccxrt_detokenize(m, ids.data() + 1, ids.size() - 1, text.data(),
                              length, &length),
            0);
  EXPECT_LT(pccxrt_tokenize(m, nullptr, 1, nullptr, 0, &count), 0);
  pccxrt_close(m);
}

TEST(CApi, ResetRestartsTheSampler) {
  pccxrt_model *m = pccxrt_open(tinyBundle().c_str(), PCCXRT_DEVICE_SIM,
                                PCCXRT_NUMERICS_HARDWARE);
  ASSERT_NE(m, nullptr) << pccxrt_last_error(nullptr);
  pccxrt_sampling warm = {1.0, 0, 1.0, 1.0, 42};
  auto draws = [&] {
    std::vector<int32_t> out;
    std::vector<float> row(512);
    for (int i = 0; i < 8; ++i) {
      for (int v = 0; v < 512; ++v)
        row[size_t(v)] = float(v % 7); // a flat-ish distribution
      int32_t token = -1;
      EXPECT_EQ(pccxrt_sample(m, &warm, row.data(), nullptr, 0, &token), 0);
      out.push_back(token);
    }
    return out;
  };
  std::vector<int32_t> first = draws(), second = draws();
  EXPECT_NE(first, second); // the generator went on
  ASSERT_EQ(pccxrt_reset(m), 0);
  EXPECT_EQ(draws(), first); // and restarts after a reset
  pccxrt_close(m);
}
