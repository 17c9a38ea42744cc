//===- HostKernelTests.cpp - the CPU side of a partitioned model ----------===//
//
// Each kernel against the formula it implements, computed here in double;
// the error paths must name the kernel and the parameter.
//
//===----------------------------------------------------------------------===//

#include "runtime/host/HostKernels.h"

#include "hw/numerics/Elementary.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

using namespace pccx;
using namespace pccx::host;
using nlohmann::json;

namespace {

/// A 32-word host window and the tables a test adds.
struct Host {
  std::vector<float> window = std::vector<float>(32 * 8, 0.0f);
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, GatherTable> gathers;
  std::vector<KvCache> caches;
  std::map<std::string, int> cacheIndex;
  HostContext ctx;
  std::string error;
  Host() {
    ctx.window = window.data();
    ctx.windowWords = 32;
    ctx.caches = &caches;
    ctx.tokens = {0};
  }
  float *word(int64_t w) { return window.data() + w * 8; }
  void addCache(const std::string &name, KvCache cache) {
    cacheIndex[name] = int(caches.size());
    caches.push_back(std::move(cache));
  }
  KvCache &cache(const std::string &name) {
    return caches[size_t(cacheIndex.at(name))];
  }
  bool run(const char *kernel, const json &params) {
    BindTables tables{&tensors, &gathers, &cacheIndex};
    return runKernel(kernel, params, tables, ctx, &error);
  }
};

TEST(HostKernels, RmsNormWithAndWithoutGain) {
  Host h;
  const float x[5] = {1.0f, -2.0f, 3.0f, 0.5f, -0.25f};
  std::copy(x, x + 5, h.word(0));
  const float gain[5] = {1.0f, 0.5f, 2.0f, 1.5f, -1.0f};
  h.tensors["g"] = {1, 5, gain};
  ASSERT_TRUE(h.run("rms_norm", {{"in", {0, 5, 1, 1}},
                                 {"out", {2, 5, 1, 1}},
                                 {"eps", 1e-6},
                                 {"gain", "g"}}))
      << h.error;
  ASSERT_TRUE(h.run("rms_norm",
                    {{"in", {0, 5, 1, 1}}, {"out", {4, 5, 1, 1}}, {"eps", 1e-6}}))
      << h.error;
  double ms = 0;
  for (float v : x)
    ms += double(v) * v;
  const double inv = 1.0 / std::sqrt(ms / 5 + 1e-6);
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(h.word(2)[i], x[i] * inv * gain[i], 1e-6);
    EXPECT_NEAR(h.word(4)[i], x[i] * inv, 1e-6);
  }
}

TEST(HostKernels, SoftCapAndMul) {
  Host h;
  const float x[3] = {-90.0f, 0.3f, 45.0f};
  std::copy(x, x + 3, h.word(0));
  ASSERT_TRUE(h.run("softcap",
                    {{"in", {0, 3, 1, 1}}, {"out", {1, 3, 1, 1}}, {"cap", 30.0}}))
      << h.error;
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(h.word(1)[i], 30.0 * std::tanh(x[i] / 30.0), 1e-5);
  const float y[3] = {2.0f, -1.0f, 0.5f};
  std::copy(y, y + 3, h.word(2));
  // In place: the product overwrites its first operand.
  ASSERT_TRUE(h.run("mul", {{"a", {0, 3, 1, 1}},
                            {"b", {2, 3, 1, 1}},
                            {"out", {0, 3, 1, 1}}}))
      << h.error;
  EXPECT_EQ(h.word(0)[0], -180.0f);
  EXPECT_EQ(h.word(0)[1], -0.3f);
  EXPECT_EQ(h.word(0)[2], 22.5f);
}

TEST(HostKernels, SoftCapOfBf16ValuesIsTheFormulaBitForBit) {
  // Every BF16 pattern (NaNs, infinities, subnormals included), 2048 per
  // call, against hw::tanhf(x / cap) * cap in float; then values that are
  // not BF16 (reference numerics) and a second cap (the table is rebuilt).
  // The outputs over every pattern are pinned by a checksum (FNV-1a over
  // their bits): a platform on which one bit differs fails.
  Host h;
  h.window.assign(1024 * 8, 0.0f);
  h.ctx.window = h.window.data();
  h.ctx.windowWords = 1024;
  const std::map<float, uint64_t> pinned = {{30.0f, 0xf3fc25aa96319705ull},
                                             {7.5f, 0x5707fe7cbfeefad5ull}};
  for (float cap : {30.0f, 7.5f}) {
    uint64_t checksum = 0xcbf29ce484222325ull;
    for (uint32_t base = 0; base < 65536; base += 2048) {
      for (uint32_t i = 0; i < 2048; ++i)
        h.word(0)[i] = hw::bf16ToFloat(uint16_t(base + i));
      ASSERT_TRUE(h.run("softcap", {{"in", {0, 2048, 1, 256}},
                                    {"out", {256, 2048, 1, 256}},
                                    {"cap", cap}}))
          << h.error;
      for (uint32_t i = 0; i < 2048; ++i) {
        const float x = hw::bf16ToFloat(uint16_t(base + i)),
                    want = hw::tanhf(x / cap) * cap, got = h.word(256)[i];
        ASSERT_EQ(hw::floatBits(got), hw::floatBits(want))
            << "bf16 0x" << std::hex << base + i;
        const uint32_t bits = hw::floatBits(got);
        for (int b = 0; b < 4; ++b) {
          checksum ^= (bits >> (8 * b)) & 0xffu;
          checksum *= 0x100000001b3ull;
        }
      }
    }
    EXPECT_EQ(checksum, pinned.at(cap)) << "cap " << cap << ": 0x" << std::hex
                                        << checksum;
    const float odd[3] = {0.1f, -12.3456789f, 1e-30f};
    std::copy(odd, odd + 3, h.word(0));
    ASSERT_TRUE(h.run("softcap", {{"in", {0, 3, 1, 1}},
                                  {"out", {1, 3, 1, 1}},
                                  {"cap", cap}}))
        << h.error;
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(h.word(1)[i], hw::tanhf(odd[i] / cap) * cap);
  }
}

TEST(HostKernels, CombineSumsThenScales) {
  Host h;
  // Two rows of 3 per operand, one word per row.
  const float a[2][3] = {{1, 2, 3}, {-4, 0.25f, 8}};
  const float b[2][3] = {{3, -2, 0.5f}, {4, 0.75f, -6}};
  for (int r = 0; r < 2; ++r) {
    std::copy(a[r], a[r] + 3, h.word(r));
    std::copy(b[r], b[r] + 3, h.word(2 + r));
  }
  ASSERT_TRUE(h.run("combine", {{"inputs", {{0, 3, 2, 1}, {2, 3, 2, 1}}},
                                {"scale", 0.5},
                                {"out", {4, 3, 2, 1}}}))
      << h.error;
  const float expected[2][3] = {{2, 0, 1.75f}, {0, 0.5f, 1}};
  for (int r = 0; r < 2; ++r)
    for (int e = 0; e < 3; ++e)
      EXPECT_EQ(h.word(4 + r)[e], expected[r][e]) << r << "," << e;

  EXPECT_FALSE(h.run("combine", {{"inputs", {{0, 2, 2, 1}}},
                                 {"scale", 1.0},
                                 {"out", {4, 3, 2, 1}}}));
  EXPECT_EQ(h.error, "host kernel 'combine': parameter 'inputs' has 2 "
                     "elements per row, expected 3");
  EXPECT_FALSE(h.run("combine", {{"inputs", {0, 3, 2, 1}},
                                 {"scale", 1.0},
                                 {"out", {4, 3, 2, 1}}}));
  EXPECT_EQ(h.error, "host kernel 'combine': parameter 'inputs' must be a list "
                     "of regions");
}

TEST(HostKernels, AddRmsNormAndMulTensor) {
  Host h;
  const float x[4] = {0.5f, -1.0f, 2.0f, 0.0f};
  const float y[4] = {3.0f, -4.0f, 0.0f, 0.0f}; // mean square 25 / 4
  const float gain[4] = {2.0f, 1.0f, -1.0f, 4.0f};
  std::copy(x, x + 4, h.word(0));
  std::copy(y, y + 4, h.word(1));
  h.tensors["g"] = {1, 4, gain};
  ASSERT_TRUE(h.run("add_rms_norm", {{"x", {0, 4, 1, 1}},
                                     {"y", {1, 4, 1, 1}},
                                     {"out", {2, 4, 1, 1}},
                                     {"eps", 0.0},
                                     {"gain", "g"}}))
      << h.error;
  // rms(y) = 2.5: y / 2.5 * gain = {2.4, -1.6, 0, 0}.
  const float expected[4] = {2.9f, -2.6f, 2.0f, 0.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(h.word(2)[i], expected[i], 1e-6) << i;

  ASSERT_TRUE(h.run("mul_tensor", {{"in", {0, 4, 1, 1}},
                                   {"tensor", "g"},
                                   {"out", {3, 4, 1, 1}}}))
      << h.error;
  const float product[4] = {1.0f, -1.0f, -2.0f, 0.0f};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(h.word(3)[i], product[i]) << i;

  // The tensor's element count must match the row width.
  EXPECT_FALSE(h.run("mul_tensor", {{"in", {0, 3, 1, 1}},
                                    {"tensor", "g"},
                                    {"out", {3, 3, 1, 1}}}));
  EXPECT_EQ(h.error, "host kernel 'mul_tensor': parameter 'tensor' names host "
                     "tensor 'g' of shape [1, 4], expected [1, 3]");
}

TEST(HostKernels, GaussianTopKKeepsTheExcessOverTheCutoff) {
  Host h;
  const float x[4] = {1, 2, 3, 4}; // mean 2.5, population std sqrt(1.25)
  std::copy(x, x + 4, h.word(0));
  ASSERT_TRUE(h.run("gaussian_topk", {{"in", {0, 4, 1, 1}},
                                      {"out", {1, 4, 1, 1}},
                                      {"multiplier", 0.0}}))
      << h.error;
  EXPECT_EQ(h.word(1)[0], 0.0f);
  EXPECT_EQ(h.word(1)[1], 0.0f);
  EXPECT_EQ(h.word(1)[2], 0.5f);
  EXPECT_EQ(h.word(1)[3], 1.5f);
  ASSERT_TRUE(h.run("gaussian_topk", {{"in", {0, 4, 1, 1}},
                                      {"out", {2, 4, 1, 1}},
                                      {"multiplier", 1.0}}))
      << h.error;
  EXPECT_EQ(h.word(2)[2], 0.0f);
  EXPECT_NEAR(h.word(2)[3], 4.0 - (2.5 + std::sqrt(1.25)), 1e-6);
}

TEST(HostKernels, FillAndStridedRegions) {
  Host h;
  // Two rows of 3 at a stride of 2 words.
  ASSERT_TRUE(h.run("fill", {{"out", {4, 3, 2, 2}}, {"value", 1.5}})) << h.error;
  EXPECT_EQ(h.word(4)[2], 1.5f);
  EXPECT_EQ(h.word(4)[3], 0.0f);
  EXPECT_EQ(h.word(5)[0], 0.0f);
  EXPECT_EQ(h.word(6)[0], 1.5f);
}

TEST(HostKernels, KvCacheRingAndStorage) {
  const float row[2] = {1.0f / 3.0f, -70000.0f};
  KvCache f16(4, 2, KvStorage::F16);
  f16.write(1, row);
  EXPECT_EQ(f16.at(1, 0), hw::f16ToFloat(hw::floatToF16(1.0f / 3.0f)));
  EXPECT_TRUE(std::isinf(f16.at(1, 1))); // past fp16 range
  // Position 5 lands in slot 1 of the 4-slot ring.
  const float other[2] = {2.0f, 4.0f};
  f16.write(5, other);
  EXPECT_EQ(f16.at(1, 0), 2.0f);
  EXPECT_EQ(f16.at(5, 1), 4.0f);

  KvCache i8(3, 4, KvStorage::Int8);
  const float v[4] = {1.0f, -0.5f, 0.25f, 0.0f};
  i8.write(2, v);
  // scale 1/127: codes 127, -64 (63.5 rounds away), 32 (31.75), 0.
  EXPECT_FLOAT_EQ(i8.at(2, 0), 1.0f);
  EXPECT_FLOAT_EQ(i8.at(2, 1), -64.0f / 127.0f);
  EXPECT_FLOAT_EQ(i8.at(2, 2), 32.0f / 127.0f);
  EXPECT_EQ(i8.at(2, 3), 0.0f);

  KvCache f32(2, 2, KvStorage::F32);
  f32.write(0, row);
  EXPECT_EQ(f32.at(0, 1), -70000.0f);

  KvDtype d;
  EXPECT_TRUE(parseChoice("int8", &d));
  EXPECT_EQ(hostStorage(d), KvStorage::Int8);
  EXPECT_FALSE(parseChoice("bf16", &d));
}

TEST(HostKernels, CacheWriteAtTheStepPositions) {
  Host h;
  h.addCache("kv", KvCache(8, 3, KvStorage::F32));
  h.ctx.position = 6;
  h.ctx.tokens = {0, 0};
  const float rows[2][3] = {{1, 2, 3}, {4, 5, 6}};
  std::copy(rows[0], rows[0] + 3, h.word(0));
  std::copy(rows[1], rows[1] + 3, h.word(1));
  ASSERT_TRUE(h.run("cache_write", {{"rows", {0, 3, 2, 1}}, {"cache", "kv"}}))
      << h.error;
  EXPECT_EQ(h.cache("kv").at(6, 2), 3.0f);
  EXPECT_EQ(h.cache("kv").at(7, 0), 4.0f);
}

TEST(HostKernels, CacheWriteWrapsAnFp16Ring) {
  Host h;
  h.addCache("k", KvCache(4, 3, KvStorage::F16));
  const float old[3] = {9, 9, 9};
  h.cache("k").write(0, old);
  // Positions 3 and 4 of a 4-slot ring: slots 3 and 0.
  h.ctx.position = 3;
  h.ctx.tokens = {0, 0};
  const float rows[2][3] = {{0.1f, 65504.0f, 1e-8f},
                            {-2.5f, 70000.0f, 1.0f / 3.0f}};
  std::copy(rows[0], rows[0] + 3, h.word(0));
  std::copy(rows[1], rows[1] + 3, h.word(2));
  ASSERT_TRUE(h.run("cache_write", {{"rows", {0, 3, 2, 2}}, {"cache", "k"}}))
      << h.error;
  const KvCache &k = h.cache("k");
  // fp16 by hand: 0.1 -> 0x2E66 = 0.0999755859375; 65504 is the largest
  // finite value; 1e-8 is under half the smallest subnormal (2^-24) -> 0;
  // 70000 -> inf; 1/3 -> 0x3555 = 0.333251953125.
  EXPECT_EQ(k.at(3, 0), 0.0999755859375f);
  EXPECT_EQ(k.at(3, 1), 65504.0f);
  EXPECT_EQ(k.at(3, 2), 0.0f);
  float slot0[3];
  k.read(0, slot0);
  EXPECT_EQ(slot0[0], -2.5f);
  EXPECT_TRUE(std::isinf(slot0[1]) && slot0[1] > 0);
  EXPECT_EQ(slot0[2], 0.333251953125f);
  EXPECT_EQ(k.at(4, 2), slot0[2]);
  // The same values through the project's converters.
  EXPECT_EQ(k.at(3, 0), hw::f16ToFloat(hw::floatToF16(0.1f)));

  // Rows must match the step's tokens, and the width the cache's.
  h.ctx.tokens = {0};
  EXPECT_FALSE(h.run("cache_write", {{"rows", {0, 3, 2, 2}}, {"cache", "k"}}));
  EXPECT_EQ(h.error, "host kernel 'cache_write': parameter 'rows' has 2 rows "
                     "but the step has 1 tokens");
  EXPECT_FALSE(h.run("cache_write", {{"rows", {0, 2, 1, 1}}, {"cache", "k"}}));
  EXPECT_EQ(h.error, "host kernel 'cache_write': parameter 'cache' names a KV "
                     "cache of width 3, expected 2");
}

TEST(HostKernels, EmbedFromQuantizedTables) {
  const float table[3][4] = {{0, 0, 0, 0}, {7, -7, 3.5f, 1}, {1, 2, 3, 4}};
  for (hw::WeightFormat format :
       {hw::WeightFormat::Int4, hw::WeightFormat::Int8}) {
    const size_t rowBytes = hw::packedRowBytes(format, 4);
    std::vector<uint8_t> codes(3 * rowBytes);
    std::vector<float> scales(3);
    std::vector<int8_t> q(4);
    for (int r = 0; r < 3; ++r) {
      scales[size_t(r)] = hw::quantizeRow(format, table[r], 4, q.data());
      hw::packRow(format, q.data(), 4, codes.data() + r * rowBytes);
    }
    Host h;
    GatherTable g;
    g.rows = 3;
    g.cols = 4;
    g.quantized = true;
    g.format = format;
    g.codes = codes.data();
    g.scales = scales.data();
    h.gathers["emb"] = g;
    h.ctx.tokens = {1};
    ASSERT_TRUE(h.run("embed",
                      {{"table", "emb"}, {"scale", 2.0}, {"out", {0, 4, 1, 1}}}))
        << h.error;
    // Row 1, by hand: INT4 scale 7/7 = 1, codes 7, -7, 4 (3.5 rounds away
    // from zero), 1; INT8 scale 7/127, codes 127, -127, 64 (63.5), 18
    // (18.14).
    const float int4Row[4] = {7, -7, 4, 1};
    const float int8Codes[4] = {127, -127, 64, 18};
    for (int i = 0; i < 4; ++i) {
      const float expected = format == hw::WeightFormat::Int4
                                 ? int4Row[i]
                                 : int8Codes[i] * (7.0f / 127.0f);
      EXPECT_FLOAT_EQ(h.word(0)[i], 2.0f * expected) << i;
    }
    h.ctx.tokens = {3};
    EXPECT_FALSE(h.run("embed",
                       {{"table", "emb"}, {"scale", 2.0}, {"out", {0, 4, 1, 1}}}));
    EXPECT_EQ(h.error, "host kernel 'embed': parameter 'table' has no row for "
                       "token 3");
  }
}

TEST(HostKernels, EmitLogitsFillsItsRows) {
  Host h;
  std::vector<float> logits(2 * 5, -1.0f);
  h.ctx.logits = &logits;
  h.ctx.vocab = 5;
  h.ctx.tokens = {0, 0};
  for (int i = 0; i < 5; ++i)
    h.word(0)[i] = float(i);
  ASSERT_TRUE(h.run("emit_logits", {{"in", {0, 5, 1, 1}}, {"first_row", 1}}))
      << h.error;
  EXPECT_EQ(logits[0], -1.0f);
  EXPECT_EQ(logits[5 + 4], 4.0f);
  EXPECT_EQ(h.ctx.emittedRows, 1);
  // A NaN leaves as the canonical one, whatever its sign and payload.
  h.word(0)[1] = hw::bitsFloat(0xffc00000u); // x86-64's default NaN
  h.word(0)[2] = hw::bitsFloat(0x7f800123u); // signalling, with a payload
  ASSERT_TRUE(h.run("emit_logits", {{"in", {0, 5, 1, 1}}, {"first_row", 0}}))
      << h.error;
  EXPECT_EQ(hw::floatBits(logits[1]), 0x7fc00000u);
  EXPECT_EQ(hw::floatBits(logits[2]), 0x7fc00000u);
  EXPECT_EQ(logits[3], 3.0f);
  EXPECT_FALSE(h.run("emit_logits", {{"in", {0, 4, 1, 1}}, {"first_row", 0}}));
  EXPECT_EQ(h.error, "host kernel 'emit_logits': parameter 'in' has 4 logits "
                     "per row, the vocabulary has 5");
  EXPECT_FALSE(h.run("emit_logits", {{"in", {0, 5, 1, 1}}, {"first_row", 2}}));
  EXPECT_NE(h.error.find("parameter 'first_row' names rows past the step's 2 "
                         "tokens"),
            std::string::npos)
      << h.error;
}

// A multi-row step's LM head hands its logits over tile by tile: a row
// counts as emitted with the slice that reaches its last column.
TEST(HostKernels, EmitLogitsTakesColumnSlices) {
  Host h;
  std::vector<float> logits(2 * 5, -1.0f);
  h.ctx.logits = &logits;
  h.ctx.vocab = 5;
  h.ctx.tokens = {0, 0};
  for (int i = 0; i < 8; ++i) {
    h.word(0)[i] = float(10 + i); // row 0 of the slice
    h.word(1)[i] = float(20 + i); // row 1
  }
  ASSERT_TRUE(h.run("emit_logits", {{"in", {0, 3, 2, 1}},
                                    {"first_row", 0},
                                    {"first_column", 0}}))
      << h.error;
  EXPECT_EQ(h.ctx.emittedRows, 0);
  ASSERT_TRUE(h.run("emit_logits", {{"in", {0, 2, 2, 1}},
                                    {"first_row", 0},
                                    {"first_column", 3}}))
      << h.error;
  EXPECT_EQ(h.ctx.emittedRows, 2);
  EXPECT_EQ(logits, (std::vector<float>{10, 11, 12, 10, 11, 20, 21, 22, 20,
                                        21}));
  EXPECT_FALSE(h.run("emit_logits", {{"in", {0, 3, 1, 1}},
                                     {"first_row", 0},
                                     {"first_column", 3}}));
  EXPECT_EQ(h.error, "host kernel 'emit_logits': parameter 'in' has 3 logits "
                     "per row from column 3, the vocabulary has 5");
  EXPECT_FALSE(h.run("emit_logits", {{"in", {0, 1, 1, 1}},
                                     {"first_row", 0},
                                     {"first_column", 5}}));
  EXPECT_NE(h.error.find("'first_column' is outside the vocabulary of 5"),
            std::string::npos)
      << h.error;
}

TEST(HostKernels, ErrorsNameKernelAndParameter) {
  Host h;
  EXPECT_FALSE(h.run("no_such_kernel", json::object()));
  EXPECT_EQ(h.error.rfind("unknown host kernel 'no_such_kernel' (known: embed, ",
                          0),
            0u)
      << h.error;
  EXPECT_FALSE(h.run("fill", {{"out", {0, 8, 1, 1}}, {"value", 0.0},
                              {"colour", 1}}));
  EXPECT_EQ(h.error, "host kernel 'fill': parameter 'colour' is not a "
                     "parameter of this kernel");

  EXPECT_FALSE(h.run("softcap", {{"in", {30, 8, 4, 1}},
                                 {"out", {0, 8, 4, 1}},
                                 {"cap", 30.0}}));
  EXPECT_EQ(h.error, "host kernel 'softcap': parameter 'in' reaches past the "
                     "host window of 32 words");

  EXPECT_FALSE(h.run("softcap", {{"in", {0, 8, 1, 1}}, {"out", {1, 8, 1, 1}}}));
  EXPECT_EQ(h.error, "host kernel 'softcap': parameter 'cap' is missing");

  EXPECT_FALSE(h.run("softcap", {{"in", {0, 8, 1, 1}},
                                 {"out", {1, 8, 1, 1}},
                                 {"cap", -1.0}}));
  EXPECT_EQ(h.error, "host kernel 'softcap': parameter 'cap' must be a "
                     "positive number");

  EXPECT_FALSE(h.run("rms_norm", {{"in", {0, 8, 1, 1}},
                                  {"out", {1, 8, 1, 1}},
                                  {"eps", 1e-6},
                                  {"gain", "absent"}}));
  EXPECT_NE(h.error.find("host kernel 'rms_norm': parameter 'gain' names host "
                         "tensor 'absent'"),
            std::string::npos)
      << h.error;

  EXPECT_FALSE(h.run("cache_write", {{"rows", {0, 3, 1, 1}}, {"cache", "kv"}}));
  EXPECT_NE(h.error.find("parameter 'cache' names KV cache 'kv'"),
            std::string::npos)
      << h.error;

  // A missing region, a malformed one and parameters that are not an object.
  EXPECT_FALSE(h.run("rms_norm", {{"in", {0, 8, 1, 1}}, {"eps", 1e-6}}));
  EXPECT_EQ(h.error, "host kernel 'rms_norm': parameter 'out' is missing");
  EXPECT_FALSE(h.run("rms_norm", {{"in", {0, 8, 1}}, {"out", {1, 8, 1, 1}},
                                  {"eps", 1e-6}}));
  EXPECT_EQ(h.error, "host kernel 'rms_norm': parameter 'in' must be a region "
                     "[offset, elems, rows, stride]");
  EXPECT_FALSE(h.run("fill", {{"out", {0, 9, 1, 1}}, {"value", 0.0}}));
  EXPECT_NE(h.error.find("host kernel 'fill': parameter 'out' is not a valid "
                         "region"),
            std::string::npos)
      << h.error;
  EXPECT_FALSE(h.run("fill", json::array()));
  EXPECT_EQ(h.error, "host kernel 'fill': parameters must be an object");

  // The last word of the window is usable; one more is not.
  EXPECT_TRUE(h.run("fill", {{"out", {31, 8, 1, 1}}, {"value", 1.0}}))
      << h.error;
  EXPECT_FALSE(h.run("fill", {{"out", {30, 8, 2, 2}}, {"value", 1.0}}));
  EXPECT_EQ(h.error, "host kernel 'fill': parameter 'out' reaches past the "
                     "host window of 32 words");
}

TEST(HostKernels, HugeRegionsDoNotOverflowTheCheck) {
  Host h;
  const int64_t big = std::numeric_limits<int64_t>::max();
  const json regions[] = {{0, big, 1, 1},
                          {0, 1, 17, int64_t(1) << 59},
                          {big, 1, 1, 1},
                          {0, 8, big, 1}};
  for (const json &region : regions) {
    EXPECT_FALSE(h.run("fill", {{"out", region}, {"value", 1.0}})) << region;
    EXPECT_NE(h.error.find("host kernel 'fill': parameter 'out' "),
              std::string::npos)
        << h.error;
  }
  EXPECT_FALSE(h.run("softcap",
                     {{"in", {0, big, 1, 1}}, {"out", {0, 1, 1, 1}}, {"cap", 1.0}}));
  EXPECT_EQ(h.error, "host kernel 'softcap': parameter 'in' is not a valid "
                     "region (elems and rows positive, stride at least "
                     "ceil(elems / 8))");
  EXPECT_FALSE(h.run("softcap", {{"in", {0, big, 1, big}},
                                 {"out", {0, 1, 1, 1}},
                                 {"cap", 1.0}}));
  EXPECT_EQ(h.error, "host kernel 'softcap': parameter 'in' reaches past the "
                     "host window of 32 words");
}

TEST(HostKernels, HugeHeadCountsAreRefusedBeforeUse) {
  // heads * head_dim = INT64_MAX * 16 would overflow computing a row width.
  Host h;
  h.tensors["q_norm"] = {1, 16, h.window.data()};
  h.addCache("k", KvCache(8, 16, KvStorage::F32));
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(h.run("attention_scores", {{"q", {0, 16, 1, 2}},
                                          {"q_norm", "q_norm"},
                                          {"k_cache", "k"},
                                          {"heads", big},
                                          {"kv_heads", 1},
                                          {"head_dim", 16},
                                          {"theta", 10000.0},
                                          {"eps", 1e-6},
                                          {"window", 8}}));
  // Refused where the call is bound, before any kernel computes with it.
  EXPECT_NE(h.error.find("parameter 'heads' must be an integer from 0 to 4096"),
            std::string::npos)
      << h.error;
}

} // namespace

TEST(HostKernels, BindingBoundsIntegerParameters) {
  // Every tool binds calls the same way (the runtime and the profiler), so
  // a shape count no model has is refused before any loop runs over it.
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, GatherTable> gathers;
  std::map<std::string, int> caches;
  const float gain[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  tensors["n"] = {1, 8, gain};
  BindTables tables{&tensors, &gathers, &caches};
  nlohmann::json params = {{"q", {0, 8, 1, 1}},   {"out", {2, 8, 1, 1}},
                           {"q_norm", "n"},       {"heads", 1},
                           {"head_dim", 8},       {"theta", 10000.0},
                           {"eps", 1e-6}};
  BoundCall call;
  std::string error;
  ASSERT_TRUE(bindCall("query_norm_rope", params, tables, &call, &error))
      << error;
  for (auto [key, value] : {std::pair<const char *, int64_t>{"heads", 1ll << 40},
                            {"heads", 4097},
                            {"head_dim", -2},
                            {"head_dim", 65538}}) {
    nlohmann::json bad = params;
    bad[key] = value;
    EXPECT_FALSE(bindCall("query_norm_rope", bad, tables, &call, &error))
        << key << "=" << value;
    EXPECT_NE(error.find(std::string("'") + key + "' must be"),
              std::string::npos)
        << error;
  }
}
