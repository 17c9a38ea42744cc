//===- ModelManifestTests.cpp - the typed model manifest ------------------===//
//
// The emitter writes a ModelManifest with toJson() and every reader gets
// it back through readModelManifest(): the round trip must be exact, and
// the reader must refuse, by name, entries that do not fit the bundle.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/Bundle.h"
#include "runtime/bundle/ModelManifest.h"

#include "hw/isa/Isa.h"
#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <unistd.h>

using namespace pccx;
using namespace pccx::bundle;
using nlohmann::json;

namespace {

/// A small model manifest whose tables fit the sections writeBundle adds.
ModelManifest sample() {
  ModelManifest m;
  m.producer = "test";
  m.config = {{"vocab_size", 16}, {"eos_token_id", 1}};
  m.compileOptions = {{"max_seq_len", 8}};
  ProgramEntry p;
  p.section = "program.decode";
  p.rows = 1;
  p.windowWords = 12;
  p.weights = {{0, false, 0, 48}, {1, true, 0, 0}};
  m.programs.push_back(p);
  SegmentEntry s;
  s.name = "layer.0";
  s.program = "program.decode";
  s.begin = 0;
  s.end = 2;
  s.hostOps = {
      {0, "fill", {{"out", {0, 8, 1, 1}}, {"value", 1.0}}, false},
      {2, "emit_logits", {{"in", {0, 16, 1, 2}}, {"first_row", 0}}, true}};
  s.syncs = {1};
  m.segments.push_back(s);
  PatchPoint pp;
  pp.program = "program.decode";
  pp.index = 0;
  pp.field = "src_addr";
  pp.value = "position";
  m.patchPoints.push_back(pp);
  m.memoryMap.push_back({"x.0", "l2", "program.decode", 0, 4});
  m.annotations["program.decode"] = {"layer.0: w", "layer.0: scores"};
  m.caches.push_back({"kv.0.k", 8, 16, "int8"});
  WeightRecipe leaf;
  parseWeightRecipe({{"tensor", "norm.weight"}}, &leaf);
  m.hostTensors.push_back({"norm.weight", 0, 1, 4, leaf});
  WeightRecipe q;
  parseWeightRecipe(
      {{"quantize", {{"tensor", "embed.weight"}}}, {"scheme", "int4_per_row"}},
      &q);
  m.gathers.push_back({"embed.weight", 0, 32, 4, 8, "int4", q});
  WeightRecipe folded;
  parseWeightRecipe({{"quantize",
                      {{"scale", {{"tensor", "up.weight"}}},
                       {"by", {{"tensor", "norm.weight"}}},
                       {"factor", 0.5}}},
                     {"scheme", "int4_per_row"}},
                    &folded);
  m.weightTable.push_back(
      {0, uint64_t(hw::recordBytes(hw::WeightFormat::Int4, 2, 8)), 0, 2, 8,
       folded});
  m.weightsBytes = m.weightTable[0].bytes;
  return m;
}

class ModelManifestTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pccx-manifest-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }

  /// Writes a bundle with `manifest` and the sections it describes.
  std::string writeBundle(const json &manifest) {
    BundleWriter w;
    std::string error, path = dir_ + "/m.pccx";
    isa::Instruction gemv(isa::Opcode::Gemv);
    uint64_t word = 0;
    EXPECT_TRUE(isa::encode(gemv, word, &error)) << error;
    EXPECT_TRUE(w.addManifest(manifest, &error)) << error;
    EXPECT_TRUE(w.addProgram("program.decode", {word, word}, &error)) << error;
    EXPECT_TRUE(w.addSection("weights", SectionKind::Weights,
                             std::vector<uint8_t>(48, 0), &error))
        << error;
    EXPECT_TRUE(w.addSection("host_tensors", SectionKind::Constants,
                             std::vector<uint8_t>(16, 0), &error))
        << error;
    EXPECT_TRUE(w.addSection("gather", SectionKind::Weights,
                             std::vector<uint8_t>(64, 0), &error))
        << error;
    EXPECT_TRUE(w.write(path, &error)) << error;
    return path;
  }

  /// readModelManifest's error for `manifest` changed by `edit`.
  std::string errorOf(const std::function<void(json &)> &edit) {
    json j = toJson(sample());
    edit(j);
    std::string error;
    auto b = Bundle::open(writeBundle(j), &error);
    EXPECT_NE(b, nullptr) << error;
    ModelManifest m;
    EXPECT_FALSE(readModelManifest(*b, &m, &error));
    return error;
  }

  std::string dir_;
};

TEST_F(ModelManifestTest, RoundTripsEveryTable) {
  const ModelManifest in = sample();
  std::string error;
  auto b = Bundle::open(writeBundle(toJson(in)), &error);
  ASSERT_NE(b, nullptr) << error;
  ModelManifest out;
  ASSERT_TRUE(readModelManifest(*b, &out, &error)) << error;
  EXPECT_EQ(toJson(out), toJson(in));
  EXPECT_EQ(out.vocabSize, 16);
  EXPECT_EQ(out.maxSeqLen, 8);
  ASSERT_EQ(out.programs.size(), 1u);
  EXPECT_EQ(out.programs[0].windowWords, 12);
  ASSERT_EQ(out.programs[0].weights.size(), 2u);
  EXPECT_TRUE(out.programs[0].weights[1].dynamic);
  ASSERT_EQ(out.segments.size(), 1u);
  EXPECT_TRUE(out.segments[0].hostOps[1].sync);
  EXPECT_EQ(out.segments[0].syncs, std::vector<uint64_t>{1});
  EXPECT_EQ(out.caches[0].dtype, "int8");
  EXPECT_EQ(out.weightTable[0].recipe.tensor, "up.weight");
  EXPECT_EQ(out.weightTable[0].recipe.scaledBy, "norm.weight");
  EXPECT_FLOAT_EQ(out.weightTable[0].recipe.factor, 0.5f);
  EXPECT_EQ(out.weightTable[0].recipe.scheme, "int4_per_row");
  EXPECT_EQ(out.gathers[0].scalesOffset, 32u);
  EXPECT_NE(out.program("program.decode"), nullptr);
  EXPECT_EQ(out.program("program.prefill"), nullptr);
}

TEST_F(ModelManifestTest, RefusesAChatTemplateLargerThanTheCompilerEmbeds) {
  EXPECT_NE(errorOf([](json &j) {
              j["chat_template"] = std::string((1 << 20) + 1, 'x');
            }).find("manifest 'chat_template': is larger than 1048576 bytes"),
            std::string::npos);
}

TEST_F(ModelManifestTest, RefusesEntriesOutsideTheirSections) {
  EXPECT_NE(errorOf([](json &j) { j["weight_table"][0]["offset"] = 16; })
                .find("weight_table[0]: bytes [16, +48) lie outside the "
                      "weights section of 48 bytes"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["gather_tables"]["embed.weight"]["scales_offset"] = -8;
            }).find("gather table 'embed.weight': 'scales_offset' is -8"),
            std::string::npos);
  // A size that would wrap 64-bit arithmetic is refused, not wrapped.
  EXPECT_NE(errorOf([](json &j) {
              j["host_tensors"]["norm.weight"]["rows"] = uint64_t(1) << 62;
            }).find("host tensor 'norm.weight': 'rows'"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["programs"]["program.decode"]["weight_records"][0]["index"] = 7;
            }).find("names a word the program does not have"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["caches"]["kv.0.k"]["slots"] = 0;
            }).find("cache 'kv.0.k': 'slots' is 0"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["caches"]["kv.0.k"]["dtype"] = "bf16";
            }).find("dtype 'bf16' is not f16, f32 or int8"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["segments"][0]["host_ops"][0]["sync"] = "yes";
            }).find("'sync' must be true or false"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["segments"][0]["syncs"] = {9};
            }).find("a sync lies outside the segment"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j.erase("programs");
            }).find("'programs': missing or not an object"),
            std::string::npos);
  EXPECT_NE(errorOf([](json &j) {
              j["weight_table"][0]["recipe"] = {{"tensor", 3}};
            }).find("'recipe' is not a weight recipe"),
            std::string::npos);
}

TEST_F(ModelManifestTest, RefusesSizesThatWrap) {
  // 2^40 rows of 2^24 packed bytes wrap to 0 bytes in 64 bits.
  EXPECT_NE(errorOf([](json &j) {
              json &g = j["gather_tables"]["embed.weight"];
              g["rows"] = int64_t(1) << 40;
              g["cols"] = int64_t(1) << 25;
            })
                .find("gather table 'embed.weight': 1099511627776 x 16777216 "
                      "bytes do not fit the gather section"),
            std::string::npos);
  // An f32 table whose element count is out of range says so.
  EXPECT_NE(errorOf([](json &j) {
              json &g = j["gather_tables"]["embed.weight"];
              g["format"] = "f32";
              g["cols"] = int64_t(1) << 40;
            })
                .find("gather table 'embed.weight': rows x cols is more than a "
                      "table may hold"),
            std::string::npos);
  // A recipe factor a float cannot hold is not a recipe.
  EXPECT_NE(errorOf([](json &j) {
              j["weight_table"][0]["recipe"]["quantize"]["factor"] = 1e300;
            }).find("'recipe' is not a weight recipe"),
            std::string::npos);
}

} // namespace

TEST_F(ModelManifestTest, NamesARowsOwnCacheOnlyWhereRowsAreSequences) {
  // kv.0.k as key records; word 0 reads head 0 of row 1's cache.
  auto edit = [](json &j, bool independent, int64_t rows, int64_t row) {
    json &c = j["caches"]["kv.0.k"];
    c["layout"] = "keys";
    c["heads"] = 2;
    c["window"] = 0;
    json &p = j["programs"]["program.decode"];
    p["rows"] = rows;
    if (independent)
      p["independent_rows"] = true;
    p["weight_records"][0] = {
        {"index", 0}, {"cache", "kv.0.k"}, {"head", 0}, {"row", row}};
  };
  EXPECT_NE(errorOf([&](json &j) { edit(j, false, 2, 1); })
                .find("names the cache of a row, but the program's rows "
                      "share their caches"),
            std::string::npos);
  EXPECT_NE(errorOf([&](json &j) { edit(j, true, 2, 2); }).find("'row' is 2"),
            std::string::npos);
  json j = toJson(sample());
  edit(j, true, 2, 1);
  std::string error;
  auto b = Bundle::open(writeBundle(j), &error);
  ASSERT_NE(b, nullptr) << error;
  ModelManifest m;
  ASSERT_TRUE(readModelManifest(*b, &m, &error)) << error;
  EXPECT_TRUE(m.programs[0].independentRows);
  EXPECT_EQ(m.programs[0].weights[0].row, 1);
  EXPECT_EQ(toJson(m)["programs"], j["programs"]);
}
