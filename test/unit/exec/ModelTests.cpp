//===- ModelTests.cpp - opening a bundle for execution --------------------===//
//
// What a session of a model may allocate is known when the bundle is
// opened, and a bundle that needs more than the machine allows is refused
// there, with the figure, instead of failing (or being killed) mid-step. So
// is a bundle whose KV caches do not hold the positions its manifest
// promises (the caches wrap around: the mismatch would go unnoticed).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Model.h"

#include "runtime/bundle/Bundle.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
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

/// The same model with attention on the host: host KV caches.
const std::string &hostAttentionBundle() {
  static const std::string path = [] {
    std::string dir = PCCX_BIN_DIR, tmp = scratch();
    tinyBundle(); // the checkpoint
    std::string cmd = dir + "/pccx-compile " + tmp +
                      "/ckpt --max-seq-len 64 --attention host -o " + tmp +
                      "/host.pccx";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return tmp + "/host.pccx";
  }();
  return path;
}

/// `path` with its manifest changed by `edit`, written as `name`.
std::string withManifest(const std::string &path, const std::string &name,
                         const std::function<void(nlohmann::json &)> &edit) {
  std::string error;
  auto in = bundle::Bundle::open(path, &error);
  EXPECT_NE(in, nullptr) << error;
  bundle::BundleWriter w;
  for (const bundle::SectionInfo &s : in->sections()) {
    if (s.kind == bundle::SectionKind::Manifest) {
      nlohmann::json m = in->manifest();
      edit(m);
      EXPECT_TRUE(w.addManifest(m, &error)) << error;
      continue;
    }
    std::vector<uint8_t> bytes(in->data(s), in->data(s) + s.size);
    EXPECT_TRUE(w.addSection(s.name, s.kind, std::move(bytes), &error))
        << error;
  }
  std::string out = scratch() + "/" + name + ".pccx";
  EXPECT_TRUE(w.write(out, &error)) << error;
  return out;
}

/// Model::load's error for `path` ("" when it opens).
std::string loadError(const std::string &path) {
  std::string error;
  return exec::Model::load(path, &error) ? "" : error;
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

TEST(ModelLoad, CachesHoldTheManifestsMaxSeqLen) {
  // The unedited bundles open: the tests below fail for the edit.
  for (const std::string *path : {&tinyBundle(), &hostAttentionBundle()}) {
    std::string error;
    auto model = exec::Model::load(*path, &error);
    ASSERT_TRUE(model) << error;
    EXPECT_EQ(model->maxSeqLen(), 64);
  }
  // The tiny model's layer 2 is global: its caches hold every position.
  for (const std::string *path : {&tinyBundle(), &hostAttentionBundle()}) {
    std::string error = loadError(withManifest(
        *path, "seq-" + std::to_string(path == &tinyBundle()),
        [](nlohmann::json &m) { m["compile_options"]["max_seq_len"] = 32; }));
    EXPECT_NE(error.find("KV cache 'kv.2.k' has 64 slots, but "
                         "compile_options.max_seq_len (32) gives 32"),
              std::string::npos)
        << error;
  }
}

TEST(ModelLoad, SlidingCachesHoldTheWindowAndAPrefillStep) {
  // Sliding layer 0 (window 8, 16 prefill rows): a ring of 23 slots.
  std::string error = loadError(
      withManifest(hostAttentionBundle(), "ring", [](nlohmann::json &m) {
        m["caches"]["kv.0.v"]["slots"] = 64;
      }));
  EXPECT_NE(error.find("KV cache 'kv.0.v' has 64 slots, but "
                       "config.sliding_window + compile_options.prefill_rows "
                       "- 1 (23), less than compile_options.max_seq_len (64) "
                       "gives 23"),
            std::string::npos)
      << error;
  error = loadError(
      withManifest(hostAttentionBundle(), "no-rows", [](nlohmann::json &m) {
        m["compile_options"].erase("prefill_rows");
      }));
  EXPECT_NE(error.find("KV cache 'kv.0.k' belongs to a sliding layer, but "
                       "config.sliding_window or compile_options.prefill_rows "
                       "is missing"),
            std::string::npos)
      << error;
}
