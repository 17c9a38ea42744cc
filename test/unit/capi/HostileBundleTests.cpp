//===- HostileBundleTests.cpp - libpccxrt on checksummed hostile bundles -===//
//
// A bundle whose checksums are valid but whose manifest tables or data are
// hostile must be refused (or stopped) with an error value: never a crash,
// an exception through the C API, or tokens sampled from garbage.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Bundle.h"
#include "runtime/capi/pccxrt.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace pccx::bundle;
using nlohmann::json;

namespace {

std::string scratch() {
  return testing::TempDir() + "pccxrt-hostile-" + std::to_string(::getpid());
}

struct Cleanup : testing::Environment {
  void TearDown() override {
    (void)std::system(("rm -rf " + scratch()).c_str());
  }
};
testing::Environment *const cleanup =
    testing::AddGlobalTestEnvironment(new Cleanup);

/// The tiny model compiled with attention on the host (its host caches,
/// dynamic records and patch points are what most tests attack), or on the
/// NPU (KV records).
std::string tinyBundle(bool npuAttention = false) {
  static std::string paths[2];
  std::string &path = paths[npuAttention];
  if (!path.empty())
    return path;
  std::string dir = PCCX_BIN_DIR;
  std::string tmp = scratch();
  std::string name = npuAttention ? "/npu.pccx" : "/tiny.pccx";
  std::string cmd = "mkdir -p " + tmp + " && (test -d " + tmp + "/ckpt || " +
                    dir + "/pccx-make-checkpoint --preset tiny -o " + tmp +
                    "/ckpt) && " + dir + "/pccx-compile " + tmp +
                    "/ckpt --max-seq-len 32 --attention " +
                    (npuAttention ? "npu" : "host") + " -o " + tmp + name;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  path = tmp + name;
  return path;
}

using SectionEdit =
    std::function<void(const std::string &name, std::vector<uint8_t> &bytes)>;

/// The tiny bundle with its manifest changed by `edit` (and any section by
/// `sections`), written again with valid checksums.
std::string rewritten(const std::string &name,
                      const std::function<void(json &)> &edit,
                      const SectionEdit &sections = nullptr,
                      bool npuAttention = false) {
  std::string error;
  auto in = Bundle::open(tinyBundle(npuAttention), &error);
  EXPECT_NE(in, nullptr) << error;
  BundleWriter w;
  for (const SectionInfo &s : in->sections()) {
    if (s.kind == SectionKind::Manifest) {
      json m = in->manifest();
      edit(m);
      EXPECT_TRUE(w.addManifest(m, &error)) << error;
      continue;
    }
    std::vector<uint8_t> bytes(in->data(s), in->data(s) + s.size);
    if (sections)
      sections(s.name, bytes);
    EXPECT_TRUE(w.addSection(s.name, s.kind, std::move(bytes), &error))
        << error;
  }
  std::string path = scratch() + "/" + name + ".pccx";
  EXPECT_TRUE(w.write(path, &error)) << error;
  return path;
}

/// pccxrt_open's error for the edited bundle ("" when it opens).
std::string openError(const std::string &path) {
  pccxrt_model *m =
      pccxrt_open(path.c_str(), PCCXRT_DEVICE_SIM, PCCXRT_NUMERICS_HARDWARE);
  if (m) {
    pccxrt_close(m);
    return "";
  }
  return pccxrt_last_error(nullptr);
}

/// pccxrt_consume's error on a three-token prompt ("" when it succeeds).
std::string consumeError(const std::string &path) {
  pccxrt_model *m =
      pccxrt_open(path.c_str(), PCCXRT_DEVICE_SIM, PCCXRT_NUMERICS_HARDWARE);
  EXPECT_NE(m, nullptr) << pccxrt_last_error(nullptr);
  if (!m)
    return "(open failed)";
  std::vector<int32_t> prompt = {2, 100, 400};
  std::vector<float> logits(prompt.size() * size_t(pccxrt_vocab_size(m)));
  std::string error;
  if (pccxrt_consume(m, prompt.data(), prompt.size(), 0, logits.data()) != 0)
    error = pccxrt_last_error(m);
  pccxrt_close(m);
  return error;
}

std::string firstGather(const json &m) {
  return m["gather_tables"].begin().key();
}

} // namespace

TEST(HostileBundle, UnchangedRewriteRuns) {
  EXPECT_EQ(consumeError(rewritten("same", [](json &) {})), "");
}

TEST(HostileBundle, WrappingGatherSizeIsRefused) {
  // rows * packed row bytes = 2^40 * 2^24 wraps to 0 in 64 bits.
  std::string error = openError(rewritten("gather-wrap", [](json &m) {
    json &g = m["gather_tables"][firstGather(m)];
    g["format"] = "int4";
    g["rows"] = int64_t(1) << 40;
    g["cols"] = int64_t(1) << 25;
    g["offset"] = 0;
    g["scales_offset"] = 0;
  }));
  EXPECT_NE(error.find("gather table"), std::string::npos) << error;
}

TEST(HostileBundle, HugeCachesAndVocabularyAreRefusedBeforeAllocation) {
  std::string caches = openError(rewritten("caches", [](json &m) {
    for (auto &[name, spec] : m["caches"].items()) {
      spec["slots"] = int64_t(1) << 24;
      spec["width"] = int64_t(1) << 20;
    }
  }));
  EXPECT_NE(caches.find("a session may use"), std::string::npos)
      << caches;
  std::string vocab = openError(rewritten(
      "vocab", [](json &m) { m["config"]["vocab_size"] = int64_t(1) << 31; }));
  EXPECT_NE(vocab.find("a session may use"), std::string::npos)
      << vocab;
}

TEST(HostileBundle, PrefillRowsOutsideTheContextAreRefused) {
  // 4 * 2^62 wrapped to 0 in the batch scheduler's prompt chunk, which then
  // looped without end.
  for (int64_t rows : {int64_t(1) << 62, int64_t(65536), int64_t(0),
                       int64_t(-1)}) {
    std::string error = openError(rewritten(
        "prefill-rows", [&](json &m) {
          m["compile_options"]["prefill_rows"] = rows;
        }));
    EXPECT_NE(error.find("compile_options: 'prefill_rows' is " +
                         std::to_string(rows) + ", outside [1, 65535]"),
              std::string::npos)
        << error;
  }
}

TEST(HostileBundle, OverflowingPatchValueStopsTheStep) {
  std::string error = consumeError(rewritten("patch", [](json &m) {
    for (json &p : m["patch_points"]) {
      p["scale"] = INT64_MAX;
      p["offset"] = INT64_MAX;
    }
  }));
  EXPECT_NE(error.find("overflows 64 bits"), std::string::npos) << error;
}

TEST(HostileBundle, MalformedMemoryMapIsNotAnException) {
  std::string error = openError(rewritten("memory-map", [](json &m) {
    m["memory_map"] = json::array({{{"offset", "x"}, {"name", 3}}, 7});
  }));
  EXPECT_EQ(error, "");
}

TEST(HostileBundle, NonFiniteLogitsStopWithTheStepNamed) {
  // Every host tensor (norm gains among them) NaN.
  std::string error = consumeError(rewritten(
      "nan", [](json &) {},
      [](const std::string &name, std::vector<uint8_t> &bytes) {
        if (name == "host_tensors")
          std::fill(bytes.begin(), bytes.end(), 0xff);
      }));
  EXPECT_NE(error.find("at position 0: logit 0 of row 0 (token 2) is NaN"),
            std::string::npos)
      << error;
}

/// The first weight record of the decode program that names a KV cache.
json &firstCacheRecord(json &m, const char *key) {
  for (json &u : m["programs"]["program.decode"]["weight_records"])
    if (u.contains(key))
      return u;
  ADD_FAILURE() << "no weight record names a " << key;
  static json none;
  return none;
}

TEST(HostileBundle, KvRecordsNamingWhatIsNotThereAreRefused) {
  std::string unknown = openError(rewritten(
      "kv-unknown",
      [](json &m) { firstCacheRecord(m, "cache")["cache"] = "kv.99.k"; },
      nullptr, true));
  EXPECT_NE(unknown.find("names 'kv.99.k', which is not a key or value record "
                         "cache"),
            std::string::npos)
      << unknown;
  std::string head = openError(rewritten(
      "kv-head", [](json &m) { firstCacheRecord(m, "cache")["head"] = 99; },
      nullptr, true));
  EXPECT_NE(head.find("'head' is 99, outside [0, 1]"), std::string::npos)
      << head;
  std::string row = openError(rewritten(
      "kv-row", [](json &m) { firstCacheRecord(m, "mask")["row"] = 1; },
      nullptr, true));
  EXPECT_NE(row.find("'row' is 1, outside [0, 0]"), std::string::npos) << row;
  std::string slots = openError(rewritten(
      "kv-slots",
      [](json &m) {
        for (auto &[name, spec] : m["caches"].items())
          spec["slots"] = int64_t(1) << 20;
      },
      nullptr, true));
  EXPECT_NE(slots.find("outside [1, 65535]"), std::string::npos) << slots;
}

TEST(HostileBundle, NpuAttentionBundleRuns) {
  // The untouched NPU-attention fixture opens and runs: the tests above
  // fail for the edit, not the bundle.
  EXPECT_EQ(consumeError(rewritten("kv-none", [](json &) {}, nullptr, true)),
            "");
}
