//===- ReferenceTests.cpp - float reference self-consistency ----*- C++ -*-===//

#include "runtime/import/CheckpointGenerator.h"
#include "runtime/reference/Math.h"
#include "runtime/reference/Reference.h"
#include "runtime/reference/Sensitivity.h"
#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <unistd.h>

using namespace pccx;
using namespace pccx::reference;

namespace {

std::string makeTempDir() {
  char tmpl[] = "/tmp/pccx-reference-XXXXXX";
  const char *dir = ::mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  return dir ? dir : "";
}

/// A generated checkpoint opened for reading; removed afterwards.
struct GeneratedModel {
  std::string dir;
  import::Gemma3nTextConfig config;
  std::unique_ptr<import::Checkpoint> checkpoint;
  std::unique_ptr<CheckpointWeights> weights;

  explicit GeneratedModel(const import::Gemma3nTextConfig &c,
                          uint64_t seed = 1) {
    dir = makeTempDir();
    config = c;
    import::GeneratorOptions options;
    options.seed = seed;
    std::string error;
    EXPECT_TRUE(import::generateCheckpoint(config, dir, options, &error))
        << error;
    checkpoint = import::Checkpoint::open(dir, &error);
    EXPECT_TRUE(checkpoint) << error;
    EXPECT_TRUE(import::validateCheckpoint(config, *checkpoint, &error))
        << error;
    weights = std::make_unique<CheckpointWeights>(*checkpoint, "model.");
  }
  ~GeneratedModel() {
    checkpoint.reset();
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
};

import::Gemma3nTextConfig tinyConfig() {
  import::Gemma3nTextConfig c;
  std::string error;
  EXPECT_TRUE(import::presetConfig("tiny", &c, &error)) << error;
  return c;
}

/// Token ids covering both sides of vocab_size_per_layer_input.
std::vector<int32_t> testTokens(int n, int vocab) {
  std::vector<int32_t> t;
  uint32_t s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    t.push_back(int32_t((s >> 8) % uint32_t(vocab)));
  }
  return t;
}

std::vector<float> run(const import::Gemma3nTextConfig &config,
                       const Weights &weights,
                       const std::vector<int32_t> &tokens,
                       const std::vector<size_t> &blocks) {
  Model model(config, weights, 256);
  std::string error;
  EXPECT_TRUE(model.ok(&error)) << error;
  std::vector<float> all, part;
  size_t next = 0;
  for (size_t n : blocks) {
    std::vector<int32_t> block(tokens.begin() + long(next),
                               tokens.begin() + long(next + n));
    EXPECT_TRUE(model.forward(block, part, &error)) << error;
    all.insert(all.end(), part.begin(), part.end());
    next += n;
  }
  EXPECT_EQ(next, tokens.size());
  EXPECT_EQ(model.position(), int64_t(tokens.size()));
  return all;
}

float maxAbsDiff(const float *a, const float *b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

float range(const std::vector<float> &v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *hi - *lo;
}

/// Weights with chosen tensors replaced by a constant, and a log of reads.
class PatchedWeights : public Weights {
public:
  PatchedWeights(const Weights &base, std::set<std::string> patched)
      : base_(base), patched_(std::move(patched)) {}
  bool readRows(const std::string &name, int64_t row, int64_t count,
                int64_t columns, float *out,
                std::string *error) const override {
    ++reads_[name];
    if (!base_.readRows(name, row, count, columns, out, error))
      return false;
    if (patched_.count(name))
      for (int64_t i = 0; i < count * columns; ++i)
        out[i] = 0.25f * float((i % 7) - 3);
    return true;
  }
  mutable std::map<std::string, int> reads_;

private:
  const Weights &base_;
  std::set<std::string> patched_;
};

TEST(Sensitivity, BudgetTakesTheMostLossPerByte) {
  // Extra bytes are int8Bytes - int4Bytes.
  std::vector<TensorSensitivity> t = {
      {"a.weight", 0.010, 100, 200}, // 1e-4 per byte
      {"b.weight", 0.030, 100, 200}, // 3e-4
      {"c.weight", 0.001, 10, 20},   // 1e-4
      {"d.weight", 0.000, 10, 20},   // nothing to gain
      {"e.weight", 0.100, 1000, 2000}};
  // 1210 INT4 bytes in all; 10 % = 121 bytes: b (100), then c (10) still
  // fits, a and e do not, d gains nothing.
  EXPECT_EQ(chooseInt8Tensors(t, 0.10),
            (std::vector<std::string>{"b.weight", "c.weight"}));
  EXPECT_TRUE(chooseInt8Tensors(t, 0.0).empty());
  EXPECT_EQ(chooseInt8Tensors(t, 1.0).size(), 4u);
  EXPECT_EQ(exactNamesRegex({"layers.0.mlp.up_proj.weight", "x+y"}),
            "layers\\.0\\.mlp\\.up_proj\\.weight|x\\+y");
  EXPECT_EQ(exactNamesRegex({}), "");
}

} // namespace

TEST(ReferenceMath, RmsNormGeluRopeQuantile) {
  float x[4] = {1, -2, 3, -4}, g[4] = {1, 2, 0.5f, 1}, y[4];
  rmsNorm(x, g, 4, 0.0f, y);
  float inv = 1.0f / std::sqrt(7.5f); // mean(1 4 9 16) = 7.5
  EXPECT_FLOAT_EQ(y[0], 1 * inv);
  EXPECT_FLOAT_EQ(y[1], -4 * inv);
  EXPECT_FLOAT_EQ(y[2], 1.5f * inv);
  EXPECT_FLOAT_EQ(y[3], -4 * inv);
  EXPECT_FLOAT_EQ(rootMeanSquare(x, 4), std::sqrt(7.5f));

  EXPECT_FLOAT_EQ(geluTanh(0), 0);
  EXPECT_NEAR(geluTanh(1.0f), 0.841192f, 1e-6);
  EXPECT_NEAR(geluTanh(-3.0f), -0.00363752f, 1e-7);

  EXPECT_NEAR(import::normalQuantile(0.95), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(import::normalQuantile(0.5), 0.0, 1e-12);
  EXPECT_NEAR(import::normalQuantile(0.01), -2.3263478740408408, 1e-12);

  // RoPE: identity at position 0; rotate_half pairs element j with j+d/2.
  float head[4] = {1, 2, 3, 4};
  applyRope(head, 4, 0, 10000.0);
  EXPECT_FLOAT_EQ(head[0], 1);
  EXPECT_FLOAT_EQ(head[3], 4);
  float h2[4] = {1, 0, 0, 0};
  applyRope(h2, 4, 1, 10000.0); // inv_freq_0 = 1: angle 1 rad
  EXPECT_FLOAT_EQ(h2[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(h2[1], 0);
  EXPECT_FLOAT_EQ(h2[2], std::sin(1.0f));
  EXPECT_FLOAT_EQ(h2[3], 0);
}

TEST(ReferenceMath, GaussianTopK) {
  float x[4] = {1, 2, 3, 6}; // mean 3, population std sqrt(3.5)
  gaussianTopK(x, 4, 1.0f);
  float cut = 3 + std::sqrt(3.5f);
  EXPECT_FLOAT_EQ(x[0], 0);
  EXPECT_FLOAT_EQ(x[2], 0);
  EXPECT_FLOAT_EQ(x[3], 6 - cut);
}

TEST(Quantize, Int4RowRule) {
  float row[5] = {0.7f, -0.35f, 0.05f, -0.7f, 0.1f};
  hw::fakeQuantizeRowInt4(row, 5); // scale 0.1
  EXPECT_FLOAT_EQ(row[0], 0.7f);
  EXPECT_FLOAT_EQ(row[1], -0.4f); // -3.5 rounds away from zero to -4
  EXPECT_FLOAT_EQ(row[2], 0.1f);  // 0.5 -> 1
  EXPECT_FLOAT_EQ(row[3], -0.7f);
  EXPECT_FLOAT_EQ(row[4], 0.1f);
  float zeros[3] = {0, 0, 0};
  hw::fakeQuantizeRowInt4(zeros, 3);
  EXPECT_EQ(zeros[1], 0);
  // -8 is reachable only by clamping: max|row| maps to +-7.
  float neg[2] = {-1.0f, 0.3f};
  hw::fakeQuantizeRowInt4(neg, 2);
  EXPECT_FLOAT_EQ(neg[0], -1.0f);
  EXPECT_FLOAT_EQ(neg[1], 2.0f / 7.0f);

  // Integer codes and packing: 2j low nibble, 2j+1 high nibble.
  float codes[5] = {7.0f, -7.0f, 3.0f, -0.5f, 0.0f};
  int8_t q[5];
  EXPECT_EQ(hw::quantizeRowInt4(codes, 5, q), 1.0f);
  EXPECT_EQ(q[0], 7);
  EXPECT_EQ(q[1], -7);
  EXPECT_EQ(q[2], 3);
  EXPECT_EQ(q[3], -1); // -0.5 rounds away from zero
  EXPECT_EQ(q[4], 0);
  uint8_t packed[3];
  hw::packInt4(q, 5, packed);
  EXPECT_EQ(packed[0], 0x97); // -7 = 0x9 high, 7 low
  EXPECT_EQ(packed[1], 0xf3); // -1 = 0xf high, 3 low
  EXPECT_EQ(packed[2], 0x00); // odd tail: high nibble 0
}

TEST(ReferenceMath, Int4PolicyFollowsDatatypeMap) {
  EXPECT_TRUE(import::isInt4ByDefault("layers.3.self_attn.q_proj.weight"));
  EXPECT_TRUE(import::isInt4ByDefault("layers.0.mlp.down_proj.weight"));
  EXPECT_TRUE(import::isInt4ByDefault("embed_tokens.weight"));
  EXPECT_TRUE(import::isInt4ByDefault("per_layer_model_projection.weight"));
  EXPECT_FALSE(import::isInt4ByDefault("layers.3.self_attn.q_norm.weight"));
  EXPECT_FALSE(import::isInt4ByDefault("layers.1.per_layer_projection.weight"));
  EXPECT_FALSE(import::isInt4ByDefault("altup_projections.0.weight"));
  EXPECT_FALSE(import::isInt4ByDefault("layers.2.altup.modality_router.weight"));
  EXPECT_FALSE(import::isInt4ByDefault("xlayers.2.mlp.up_proj.weight"));
  // The NPU matrices that stay INT8 unless asked otherwise.
  EXPECT_TRUE(import::isInt8ByDefault("layers.1.per_layer_projection.weight"));
  EXPECT_TRUE(import::isInt8ByDefault("layers.12.per_layer_projection.weight"));
  EXPECT_TRUE(import::isInt8ByDefault("altup_projections.0.weight"));
  EXPECT_TRUE(import::isInt8ByDefault("altup_unembed_projections.2.weight"));
  EXPECT_FALSE(import::isInt8ByDefault("altup_projections.x.weight"));
  EXPECT_FALSE(import::isInt8ByDefault("altup_projections..weight"));
  EXPECT_FALSE(import::isInt8ByDefault("layers..per_layer_projection.weight"));
  EXPECT_FALSE(import::isInt8ByDefault("layers.1.per_layer_projection.bias"));
  EXPECT_FALSE(import::isInt8ByDefault("layers.1.per_layer_input_gate.weight"));
  EXPECT_FALSE(import::isInt8ByDefault("per_layer_projection_norm.weight"));
  EXPECT_FALSE(import::isInt8ByDefault("layers.2.altup.modality_router.weight"));
}

TEST(Reference, PrefillEqualsStepByStepDecode) {
  GeneratedModel m(tinyConfig());
  // Longer than the sliding window (8), ids above vocab_size_per_layer_input.
  std::vector<int32_t> tokens = testTokens(24, int(m.config.vocab_size));
  ASSERT_TRUE(std::any_of(tokens.begin(), tokens.end(), [&](int32_t t) {
    return t >= m.config.vocab_size_per_layer_input;
  }));
  std::vector<float> prefill = run(m.config, *m.weights, tokens, {24});
  std::vector<float> decode =
      run(m.config, *m.weights, tokens, std::vector<size_t>(24, 1));
  std::vector<float> mixed = run(m.config, *m.weights, tokens, {5, 11, 1, 7});
  ASSERT_EQ(prefill.size(), size_t(24 * m.config.vocab_size));
  ASSERT_EQ(decode.size(), prefill.size());
  float tol = 1e-6f * range(prefill);
  EXPECT_LE(maxAbsDiff(prefill.data(), decode.data(), prefill.size()), tol);
  EXPECT_LE(maxAbsDiff(prefill.data(), mixed.data(), prefill.size()), tol);
  // The logits are not degenerate: soft-capped, spread, finite.
  float cap = float(*m.config.final_logit_softcapping);
  for (float v : prefill) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LT(std::fabs(v), cap);
  }
  EXPECT_GT(range(prefill), 1.0f);
}

TEST(Reference, ResetStartsOver) {
  GeneratedModel m(tinyConfig());
  std::vector<int32_t> tokens = testTokens(6, int(m.config.vocab_size));
  Model model(m.config, *m.weights, 16);
  std::vector<float> a, b;
  std::string error;
  ASSERT_TRUE(model.forward(tokens, a, &error)) << error;
  model.reset();
  EXPECT_EQ(model.position(), 0);
  ASSERT_TRUE(model.forward(tokens, b, &error)) << error;
  EXPECT_EQ(a, b);
  // Capacity and vocabulary are checked.
  std::vector<int32_t> many(11, 3);
  EXPECT_FALSE(model.forward(many, b, &error));
  EXPECT_NE(error.find("capacity of 16"), std::string::npos) << error;
  EXPECT_FALSE(model.forward({int32_t(m.config.vocab_size)}, b, &error));
  EXPECT_NE(error.find("outside the vocabulary"), std::string::npos) << error;
}

TEST(Reference, KvSharedLayersUseTheirSourceCache) {
  GeneratedModel m(tinyConfig());
  const auto &c = m.config;
  ASSERT_EQ(c.firstKvSharedLayer(), 5);
  ASSERT_EQ(c.kvSourceLayer(5), 3);
  ASSERT_EQ(c.kvSourceLayer(6), 4);
  std::vector<int32_t> tokens = testTokens(12, int(c.vocab_size));
  std::vector<float> base = run(c, *m.weights, tokens, {12});

  // A shared layer's own K/V weights are never read...
  std::set<std::string> sharedKv = {
      "layers.5.self_attn.k_proj.weight", "layers.5.self_attn.v_proj.weight",
      "layers.5.self_attn.k_norm.weight", "layers.6.self_attn.k_proj.weight",
      "layers.6.self_attn.v_proj.weight", "layers.6.self_attn.k_norm.weight"};
  PatchedWeights patchedShared(*m.weights, sharedKv);
  std::vector<float> withShared = run(c, patchedShared, tokens, {8, 4});
  EXPECT_EQ(patchedShared.reads_.count("layers.5.self_attn.k_proj.weight"),
            0u);
  EXPECT_EQ(patchedShared.reads_.count("layers.6.self_attn.v_proj.weight"),
            0u);
  EXPECT_LE(maxAbsDiff(base.data(), withShared.data(), base.size()),
            1e-6f * range(base));

  // ...while a cache owner's are, and they change the result.
  PatchedWeights patchedSource(*m.weights,
                               {"layers.4.self_attn.v_proj.weight"});
  std::vector<float> withSource = run(c, patchedSource, tokens, {12});
  EXPECT_GT(patchedSource.reads_["layers.4.self_attn.v_proj.weight"], 0);
  EXPECT_GT(maxAbsDiff(base.data(), withSource.data(), base.size()),
            1e-3f * range(base));

  // Without sharing, layers 5 and 6 use their own projections: different
  // logits from the same weights.
  import::Gemma3nTextConfig unshared = c;
  unshared.num_kv_shared_layers = 0;
  std::vector<float> own = run(unshared, *m.weights, tokens, {12});
  EXPECT_GT(maxAbsDiff(base.data(), own.data(), base.size()),
            1e-3f * range(base));
}

TEST(Reference, SlidingWindowMasksOldPositions) {
  // All layers sliding (window 8): through the stack, position p can see
  // token 0 only if p <= 7 * (number of cache-owning layers on the path).
  // Layer 2 is KV-shared and reads layer 1's cache, whose keys were formed
  // from layer 0's output: its reach is 14, not 21.
  import::Gemma3nTextConfig c = tinyConfig();
  c.num_hidden_layers = 3;
  c.layer_types.assign(3, import::LayerType::Sliding);
  c.intermediate_size.assign(3, 64);
  c.activation_sparsity = {0.95, 0, 0};
  c.num_kv_shared_layers = 1;
  std::string error;
  ASSERT_TRUE(c.validate(&error)) << error;
  GeneratedModel m(c);
  const int64_t V = c.vocab_size;
  std::vector<int32_t> tokens = testTokens(30, int(V));
  std::vector<int32_t> changed = tokens;
  changed[0] = (changed[0] + 1) % int32_t(V);
  auto reach = [&](const import::Gemma3nTextConfig &config, int64_t limit) {
    std::vector<float> a = run(config, *m.weights, tokens, {30});
    std::vector<float> b = run(config, *m.weights, changed, {20, 10});
    for (int64_t p = 0; p < 30; ++p) {
      float d = maxAbsDiff(a.data() + p * V, b.data() + p * V, size_t(V));
      if (p <= limit)
        EXPECT_GT(d, 0.0f) << "position " << p << " should see token 0";
      else
        EXPECT_EQ(d, 0.0f) << "position " << p << " must not see token 0";
    }
  };
  reach(c, 14);
  // Without sharing, layer 2 has its own cache one layer deeper.
  c.num_kv_shared_layers = 0;
  reach(c, 21);
  // With one full-attention layer the old token is visible everywhere.
  c.layer_types[1] = import::LayerType::Full;
  reach(c, 29);
}

TEST(Reference, QuantizedWeightsStayClose) {
  GeneratedModel m(tinyConfig());
  // Absmax scales: their levels are known multiples of max|row| / 7.
  Int4Weights int4(*m.weights, import::isInt4ByDefault,
                   {hw::WeightFormat::Int4, hw::ScaleRule::AbsMax});
  std::vector<int32_t> tokens = testTokens(10, int(m.config.vocab_size));
  std::vector<float> a = run(m.config, *m.weights, tokens, {10});
  std::vector<float> b = run(m.config, int4, tokens, {10});
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  double cosine = ab / std::sqrt(aa * bb);
  // INT4 on 64-wide rows is coarse; the figure only guards against a
  // quantizer that destroys the model or one that does nothing.
  EXPECT_GT(cosine, 0.5);
  EXPECT_LT(cosine, 1.0 - 1e-7);

  // Quantized rows hold at most 16 levels, multiples of max|row| / 7;
  // tensors outside the policy pass through unchanged.
  std::vector<float> raw(64), q(64);
  std::string error;
  ASSERT_TRUE(m.weights->readRows("layers.2.mlp.up_proj.weight", 5, 1, 64,
                                  raw.data(), &error));
  ASSERT_TRUE(int4.readRows("layers.2.mlp.up_proj.weight", 5, 1, 64, q.data(),
                            &error));
  float maxAbs = 0;
  for (float v : raw)
    maxAbs = std::max(maxAbs, std::fabs(v));
  std::set<float> levels(q.begin(), q.end());
  EXPECT_LE(levels.size(), 16u);
  for (float v : q) {
    float k = v / (maxAbs / 7);
    EXPECT_NEAR(k, std::round(k), 1e-4);
  }
  // Searched scales: still at most 16 levels, closer to the row.
  Int4Weights searched(*m.weights, import::isInt4ByDefault);
  std::vector<float> s(64);
  ASSERT_TRUE(searched.readRows("layers.2.mlp.up_proj.weight", 5, 1, 64,
                                s.data(), &error));
  EXPECT_LE(std::set<float>(s.begin(), s.end()).size(), 16u);
  double errAbsmax = 0, errSearch = 0;
  for (size_t i = 0; i < 64; ++i) {
    errAbsmax += (q[i] - raw[i]) * (q[i] - raw[i]);
    errSearch += (s[i] - raw[i]) * (s[i] - raw[i]);
  }
  EXPECT_LE(errSearch, errAbsmax);
  ASSERT_TRUE(int4.readRows("layers.2.altup.router_norm.weight", 0, 1, 64,
                            q.data(), &error));
  ASSERT_TRUE(m.weights->readRows("layers.2.altup.router_norm.weight", 0, 1,
                                  64, raw.data(), &error));
  EXPECT_EQ(q, raw);
}

TEST(Reference, MissingTensorIsNamed) {
  GeneratedModel m(tinyConfig());
  CheckpointWeights wrongPrefix(*m.checkpoint, "model.language_model.");
  Model model(m.config, wrongPrefix, 8);
  std::string error;
  EXPECT_FALSE(model.ok(&error));
  EXPECT_NE(error.find("missing tensor 'model.language_model.norm.weight'"),
            std::string::npos)
      << error;
  std::vector<float> logits;
  EXPECT_FALSE(model.forward({1}, logits, &error));
}

TEST(Generator, DeterministicAndSharded) {
  import::Gemma3nTextConfig c = tinyConfig();
  std::string a = makeTempDir(), b = makeTempDir(), error;
  import::GeneratorOptions options;
  options.seed = 7;
  ASSERT_TRUE(import::generateCheckpoint(c, a, options, &error)) << error;
  options.maxShardBytes = 64 << 10; // forces several shards
  options.prefix = "model.language_model.";
  ASSERT_TRUE(import::generateCheckpoint(c, b, options, &error)) << error;
  auto ca = import::Checkpoint::open(a, &error);
  ASSERT_TRUE(ca) << error;
  auto cb = import::Checkpoint::open(b, &error);
  ASSERT_TRUE(cb) << error;
  EXPECT_GT(cb->files().size(), 2u);
  EXPECT_EQ(ca->files().size(), 1u);
  import::Gemma3nTextConfig loaded;
  ASSERT_TRUE(import::loadGemma3nConfig(b + "/config.json", &loaded, &error))
      << error;
  EXPECT_EQ(loaded.toJson(), c.toJson());
  EXPECT_TRUE(import::validateCheckpoint(loaded, *cb, &error)) << error;
  // Same seed, same values, whatever the sharding and prefix.
  for (const std::string &name : ca->names()) {
    const import::TensorView *x = ca->find(name);
    const import::TensorView *y =
        cb->find("model.language_model." + name.substr(6));
    ASSERT_TRUE(y) << name;
    ASSERT_EQ(x->bytes, y->bytes);
    EXPECT_EQ(std::memcmp(x->data, y->data, x->bytes), 0) << name;
  }
  ca.reset();
  cb.reset();
  EXPECT_EQ(std::system(("rm -rf '" + a + "' '" + b + "'").c_str()), 0);
}
