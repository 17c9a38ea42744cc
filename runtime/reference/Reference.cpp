//===- Reference.cpp - fp32 float reference of Gemma 3n ---------*- C++ -*-===//
//
// One forward pass over a block of consecutive positions, step by step as in
// docs/gemma3n-semantics.md. Every position of the block is computed with the
// same per-position code as a single-token step, so prefill and decode differ
// only in how many cache rows are written before attention reads them.
//
//===----------------------------------------------------------------------===//

#include "runtime/reference/Reference.h"

#include "runtime/reference/Math.h"
#include "hw/numerics/KvRecords.h"
#include "hw/numerics/Quantize.h"

#include <algorithm>
#include <cmath>

namespace pccx::reference {

using import::Gemma3nTextConfig;
using import::LayerType;

Weights::~Weights() = default;

CheckpointWeights::CheckpointWeights(const import::Checkpoint &checkpoint,
                                     std::string prefix)
    : checkpoint_(checkpoint), prefix_(std::move(prefix)) {}

bool CheckpointWeights::readRows(const std::string &name, int64_t row,
                                 int64_t count, int64_t columns, float *out,
                                 std::string *error) const {
  std::string full = name == "lm_head.weight" ? name : prefix_ + name;
  const import::TensorView *view = checkpoint_.find(full);
  if (!view) {
    *error = checkpoint_.source() + ": missing tensor '" + full + "'";
    return false;
  }
  int64_t rows = view->shape.size() == 2 ? view->shape[0] : 1;
  int64_t cols = view->shape.empty() ? 1 : view->shape.back();
  if (view->shape.size() > 2 || cols != columns || row < 0 || count < 0 ||
      row + count > rows) {
    *error = view->file + ": tensor '" + full + "' of shape " +
             import::formatShape(view->shape) + " cannot supply rows [" +
             std::to_string(row) + ", " + std::to_string(row + count) +
             ") of " + std::to_string(columns) + " columns";
    return false;
  }
  return import::convertToFloat(*view, uint64_t(row * columns),
                                uint64_t(count * columns), out, error);
}

Int4Weights::Int4Weights(const Weights &base,
                         std::function<bool(const std::string &)> quantized,
                         hw::QuantScheme scheme)
    : base_(base), quantized_(std::move(quantized)), scheme_(scheme) {}

bool Int4Weights::readRows(const std::string &name, int64_t row,
                           int64_t count, int64_t columns, float *out,
                           std::string *error) const {
  if (!base_.readRows(name, row, count, columns, out, error))
    return false;
  if (quantized_(name))
    for (int64_t r = 0; r < count; ++r)
      hw::fakeQuantizeRow(scheme_, out + r * columns, size_t(columns));
  return true;
}

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kMagnitudeEps = 1e-5f;
/// Rows read per call while streaming a projection.
constexpr int64_t kRowBlock = 64;

std::string layerName(int64_t layer, const char *suffix) {
  return "layers." + std::to_string(layer) + "." + suffix;
}

/// Scales u to the root-mean-square magnitude `target` (AltUp init and
/// collapse; HF keeps the epsilon inside the square root).
void matchMagnitude(float *u, size_t n, float target) {
  float meanSquare = dot(u, u, n) / float(n);
  float scale = target / std::sqrt(std::max(meanSquare, kMagnitudeEps));
  for (size_t i = 0; i < n; ++i)
    u[i] *= scale;
}

} // namespace

struct Model::Impl {
  struct Layer {
    std::vector<float> inputNorm, postAttentionNorm, preFeedforwardNorm,
        postFeedforwardNorm, queryNorm, keyNorm, correctOutputScale,
        correctionCoefs, predictionCoefs, router, routerNorm, laurelNorm,
        postPerLayerInputNorm;
    float sparsityMultiplier = 0; // valid when sparse
    bool sparse = false;
  };

  const Gemma3nTextConfig &config;
  const Weights &weights;
  int64_t maxPositions;
  int64_t H, P, L, A, R, headDim, numHeads, numKvHeads, active;
  float eps;

  bool good = true;
  std::string loadError;
  std::vector<Layer> layers;
  std::vector<float> finalNorm, perLayerProjectionNorm;
  Model::ProjectionObserver observer;
  /// Keys and values of cache-owning layers, [maxPositions][numKvHeads *
  /// headDim]; empty for KV-shared layers.
  std::vector<std::vector<float>> keys, values;
  int64_t position = 0;
  bool kvRecords = false;

  Impl(const Gemma3nTextConfig &c, const Weights &w, int64_t maxPos)
      : config(c), weights(w), maxPositions(maxPos), H(c.hidden_size),
        P(c.hidden_size_per_layer_input), L(c.num_hidden_layers),
        A(c.altup_num_inputs), R(c.laurel_rank), headDim(c.head_dim),
        numHeads(c.num_attention_heads), numKvHeads(c.num_key_value_heads),
        active(c.altup_active_idx), eps(float(c.rms_norm_eps)) {
    good = load();
  }

  bool read(const std::string &name, int64_t rows, int64_t columns,
            std::vector<float> &out, std::string *error) const {
    out.resize(size_t(rows * columns));
    return weights.readRows(name, 0, rows, columns, out.data(), error);
  }

  bool load() {
    std::string *e = &loadError;
    if (!read("norm.weight", 1, H, finalNorm, e) ||
        !read("per_layer_projection_norm.weight", 1, P, perLayerProjectionNorm,
              e))
      return false;
    layers.resize(size_t(L));
    keys.resize(size_t(L));
    values.resize(size_t(L));
    for (int64_t i = 0; i < L; ++i) {
      Layer &l = layers[size_t(i)];
      auto n = [&](const char *suffix) { return layerName(i, suffix); };
      if (!read(n("input_layernorm.weight"), 1, H, l.inputNorm, e) ||
          !read(n("post_attention_layernorm.weight"), 1, H,
                l.postAttentionNorm, e) ||
          !read(n("pre_feedforward_layernorm.weight"), 1, H,
                l.preFeedforwardNorm, e) ||
          !read(n("post_feedforward_layernorm.weight"), 1, H,
                l.postFeedforwardNorm, e) ||
          !read(n("self_attn.q_norm.weight"), 1, headDim, l.queryNorm, e) ||
          !read(n("self_attn.k_norm.weight"), 1, headDim, l.keyNorm, e) ||
          !read(n("altup.correct_output_scale"), 1, H, l.correctOutputScale,
                e) ||
          !read(n("altup.correction_coefs.weight"), A, A, l.correctionCoefs,
                e) ||
          !read(n("altup.prediction_coefs.weight"), A * A, A,
                l.predictionCoefs, e) ||
          !read(n("altup.modality_router.weight"), A, H, l.router, e) ||
          !read(n("altup.router_norm.weight"), 1, H, l.routerNorm, e) ||
          !read(n("laurel.post_laurel_norm.weight"), 1, H, l.laurelNorm, e) ||
          !read(n("post_per_layer_input_norm.weight"), 1, H,
                l.postPerLayerInputNorm, e))
        return false;
      // HF clamps the correction coefficients on every call when a clip is
      // configured (in eval too); the prediction coefficients only while
      // training.
      if (config.altup_coef_clip) {
        float clip = float(*config.altup_coef_clip);
        for (float &v : l.correctionCoefs)
          v = std::min(clip, std::max(-clip, v));
      }
      double s = size_t(i) < config.activation_sparsity.size()
                     ? config.activation_sparsity[size_t(i)]
                     : 0.0;
      l.sparse = s > 0;
      if (l.sparse)
        l.sparsityMultiplier = float(config.sparsityMultiplier(i));
      if (config.kvSourceLayer(i) < 0) {
        keys[size_t(i)].assign(size_t(maxPositions * numKvHeads * headDim), 0);
        values[size_t(i)].assign(size_t(maxPositions * numKvHeads * headDim),
                                 0);
      }
    }
    return true;
  }

  /// y[t][r] = W[r] . x[t] for a [rows, cols] weight streamed in row
  /// blocks; x is [T][cols], y is [T][rows].
  bool project(const std::string &name, int64_t rows, int64_t cols,
               const float *x, int64_t T, float *y, std::string *error) const {
    if (observer)
      observer(name, x, T, cols);
    std::vector<float> block(size_t(std::min(rows, kRowBlock) * cols));
    for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
      int64_t n = std::min(kRowBlock, rows - r0);
      if (!weights.readRows(name, r0, n, cols, block.data(), error))
        return false;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t r = 0; r < n; ++r)
          y[t * rows + r0 + r] =
              dot(block.data() + r * cols, x + t * cols, size_t(cols));
    }
    return true;
  }

  /// tanh(W_router . (rms(x, g_router) / H)) for one position.
  void routerModalities(const Layer &l, const float *x, float *m) const {
    std::vector<float> normed(static_cast<size_t>(H));
    rmsNorm(x, l.routerNorm.data(), size_t(H), eps, normed.data());
    float scale = 1.0f / float(H);
    for (float &v : normed)
      v *= scale;
    for (int64_t k = 0; k < A; ++k)
      m[k] = std::tanh(dot(l.router.data() + k * H, normed.data(), size_t(H)));
  }

  bool forward(const std::vector<int32_t> &tokens, std::vector<float> &logits,
               std::string *error);
  bool decoderLayer(int64_t i, int64_t T, std::vector<float> &xs,
                    const std::vector<float> &perLayerInputs,
                    std::string *error);
};

bool Model::Impl::forward(const std::vector<int32_t> &tokens,
                          std::vector<float> &logits, std::string *error) {
  if (!good) {
    *error = loadError;
    return false;
  }
  const int64_t T = int64_t(tokens.size());
  const int64_t V = config.vocab_size, Vp = config.vocab_size_per_layer_input;
  if (T == 0) {
    logits.clear();
    return true;
  }
  if (position + T > maxPositions) {
    *error = "positions " + std::to_string(position) + ".." +
             std::to_string(position + T - 1) +
             " exceed the reference's capacity of " +
             std::to_string(maxPositions);
    return false;
  }
  for (int64_t t = 0; t < T; ++t)
    if (tokens[size_t(t)] < 0 || tokens[size_t(t)] >= V) {
      *error = "token id " + std::to_string(tokens[size_t(t)]) +
               " is outside the vocabulary [0, " + std::to_string(V) + ")";
      return false;
    }

  // Scaled token embeddings.
  std::vector<float> x0(size_t(T * H));
  const float embedScale = float(std::sqrt(double(H)));
  for (int64_t t = 0; t < T; ++t) {
    if (!weights.readRows("embed_tokens.weight", tokens[size_t(t)], 1, H,
                          x0.data() + t * H, error))
      return false;
    for (int64_t j = 0; j < H; ++j)
      x0[size_t(t * H + j)] *= embedScale;
  }

  // Per-layer inputs [T][L][P].
  std::vector<float> pli(size_t(T * L * P)), pleEmbedding(size_t(L * P));
  if (!project("per_layer_model_projection.weight", L * P, H, x0.data(), T,
               pli.data(), error))
    return false;
  const float projScale = float(1.0 / std::sqrt(double(H)));
  const float pleEmbedScale = float(std::sqrt(double(P)));
  for (int64_t t = 0; t < T; ++t) {
    int32_t id = tokens[size_t(t)];
    int64_t pid = id < Vp ? id : 0;
    if (!weights.readRows("embed_tokens_per_layer.weight", pid, 1, L * P,
                          pleEmbedding.data(), error))
      return false;
    for (int64_t i = 0; i < L; ++i) {
      float *p = pli.data() + (t * L + i) * P;
      for (int64_t j = 0; j < P; ++j)
        p[j] *= projScale;
      rmsNorm(p, perLayerProjectionNorm.data(), size_t(P), eps, p);
      for (int64_t j = 0; j < P; ++j)
        p[j] = (p[j] + pleEmbedding[size_t(i * P + j)] * pleEmbedScale) *
               kInvSqrt2;
    }
  }

  // AltUp streams [A][T][H], magnitude-matched to x0.
  std::vector<float> xs(size_t(A * T * H));
  std::copy(x0.begin(), x0.end(), xs.begin());
  for (int64_t k = 1; k < A; ++k) {
    float *u = xs.data() + k * T * H;
    if (!project("altup_projections." + std::to_string(k - 1) + ".weight", H,
                 H, x0.data(), T, u, error))
      return false;
    for (int64_t t = 0; t < T; ++t)
      matchMagnitude(u + t * H, size_t(H),
                     rootMeanSquare(x0.data() + t * H, size_t(H)));
  }

  for (int64_t i = 0; i < L; ++i)
    if (!decoderLayer(i, T, xs, pli, error))
      return false;

  // Collapse: unembed streams 1.., match magnitudes to stream 0, average.
  std::vector<float> unembedded(size_t(T * H)), hidden(size_t(T * H));
  std::copy(xs.begin(), xs.begin() + T * H, hidden.begin());
  for (int64_t k = 1; k < A; ++k) {
    if (!project("altup_unembed_projections." + std::to_string(k - 1) +
                     ".weight",
                 H, H, xs.data() + k * T * H, T, unembedded.data(), error))
      return false;
    for (int64_t t = 0; t < T; ++t) {
      float *u = unembedded.data() + t * H;
      matchMagnitude(u, size_t(H), rootMeanSquare(xs.data() + t * H, size_t(H)));
      for (int64_t j = 0; j < H; ++j)
        hidden[size_t(t * H + j)] += u[j];
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    float *h = hidden.data() + t * H;
    for (int64_t j = 0; j < H; ++j)
      h[j] /= float(A);
    rmsNorm(h, finalNorm.data(), size_t(H), eps, h);
  }

  logits.assign(size_t(T * V), 0);
  if (!project(config.tie_word_embeddings ? "embed_tokens.weight"
                                          : "lm_head.weight",
               V, H, hidden.data(), T, logits.data(), error))
    return false;
  if (config.final_logit_softcapping) {
    float cap = float(*config.final_logit_softcapping);
    for (float &v : logits)
      v = std::tanh(v / cap) * cap;
  }
  position += T;
  return true;
}

bool Model::Impl::decoderLayer(int64_t i, int64_t T, std::vector<float> &xs,
                               const std::vector<float> &pli,
                               std::string *error) {
  const Layer &l = layers[size_t(i)];
  const LayerType type = config.layer_types[size_t(i)];
  const int64_t F = config.intermediate_size[size_t(i)];
  const int64_t qDim = numHeads * headDim, kvDim = numKvHeads * headDim;
  const size_t h = size_t(H);
  auto stream = [&](int64_t k, int64_t t) {
    return xs.data() + (k * T + t) * H;
  };
  auto name = [&](const char *suffix) { return layerName(i, suffix); };

  // AltUp predict.
  std::vector<float> pred(size_t(A * T * H));
  std::vector<float> m(static_cast<size_t>(A)), coefs(size_t(A * A));
  for (int64_t t = 0; t < T; ++t) {
    routerModalities(l, stream(active, t), m.data());
    for (int64_t c = 0; c < A * A; ++c)
      coefs[size_t(c)] =
          dot(l.predictionCoefs.data() + c * A, m.data(), size_t(A));
    for (int64_t j = 0; j < A; ++j) {
      float *out = pred.data() + (j * T + t) * H;
      for (int64_t e = 0; e < H; ++e) {
        float acc = 0;
        for (int64_t s = 0; s < A; ++s)
          acc += coefs[size_t(j * A + s)] * stream(s, t)[e];
        out[e] = acc + stream(j, t)[e];
      }
    }
  }
  const float *act = pred.data() + active * T * H; // [T][H]

  std::vector<float> xn(size_t(T * H));
  for (int64_t t = 0; t < T; ++t)
    rmsNorm(act + t * H, l.inputNorm.data(), h, eps, xn.data() + t * H);

  // LAuReL: xn + rms(W_right . W_left . xn).
  std::vector<float> laurelLow(size_t(T * R)), laurel(size_t(T * H));
  if (!project(name("laurel.linear_left.weight"), R, H, xn.data(), T,
               laurelLow.data(), error) ||
      !project(name("laurel.linear_right.weight"), H, R, laurelLow.data(), T,
               laurel.data(), error))
    return false;
  for (int64_t t = 0; t < T; ++t) {
    float *v = laurel.data() + t * H;
    rmsNorm(v, l.laurelNorm.data(), h, eps, v);
    for (int64_t e = 0; e < H; ++e)
      v[e] += xn[size_t(t * H + e)];
  }

  // Attention. Cache rows of this block are written before any is read.
  const double theta = config.ropeTheta(type);
  std::vector<float> q(size_t(T * qDim));
  if (!project(name("self_attn.q_proj.weight"), qDim, H, xn.data(), T,
               q.data(), error))
    return false;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t hd = 0; hd < numHeads; ++hd) {
      float *head = q.data() + t * qDim + hd * headDim;
      rmsNorm(head, l.queryNorm.data(), size_t(headDim), eps, head);
      applyRope(head, size_t(headDim), position + t, theta);
    }
  if (config.kvSourceLayer(i) < 0) {
    std::vector<float> k(size_t(T * kvDim)), v(size_t(T * kvDim));
    if (!project(name("self_attn.k_proj.weight"), kvDim, H, xn.data(), T,
                 k.data(), error) ||
        !project(name("self_attn.v_proj.weight"), kvDim, H, xn.data(), T,
                 v.data(), error))
      return false;
    for (int64_t t = 0; t < T; ++t) {
      float *kRow = keys[size_t(i)].data() + (position + t) * kvDim;
      float *vRow = values[size_t(i)].data() + (position + t) * kvDim;
      for (int64_t g = 0; g < numKvHeads; ++g) {
        float *kh = k.data() + t * kvDim + g * headDim;
        float *vh = v.data() + t * kvDim + g * headDim;
        rmsNorm(kh, l.keyNorm.data(), size_t(headDim), eps, kRow + g * headDim);
        applyRope(kRow + g * headDim, size_t(headDim), position + t, theta);
        rmsNorm(vh, nullptr, size_t(headDim), eps, vRow + g * headDim);
        if (kvRecords) {
          hw::roundKeyLikeRecord(kRow + g * headDim, headDim);
          hw::roundValueLikeRecord(vRow + g * headDim, headDim);
        }
      }
    }
  }
  const int64_t cacheLayer = config.kvCacheLayer(i);
  const float *keyCache = keys[size_t(cacheLayer)].data();
  const float *valueCache = values[size_t(cacheLayer)].data();
  const int64_t groups = numHeads / numKvHeads;
  const int64_t window =
      type == LayerType::Sliding ? config.sliding_window : 0;
  std::vector<float> attnOut(size_t(T * qDim)), scores;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = position + t;
    const int64_t first = window > 0 ? std::max<int64_t>(0, p - window + 1) : 0;
    scores.resize(size_t(p - first + 1));
    for (int64_t hd = 0; hd < numHeads; ++hd) {
      const float *qh = q.data() + t * qDim + hd * headDim;
      const int64_t g = hd / groups;
      float maxScore = -INFINITY;
      for (int64_t k = first; k <= p; ++k) {
        float s = dot(qh, keyCache + k * kvDim + g * headDim, size_t(headDim));
        scores[size_t(k - first)] = s;
        maxScore = std::max(maxScore, s);
      }
      float sum = 0;
      for (float &s : scores) {
        s = std::exp(s - maxScore);
        sum += s;
      }
      float *o = attnOut.data() + t * qDim + hd * headDim;
      std::fill(o, o + headDim, 0.0f);
      for (int64_t k = first; k <= p; ++k) {
        float w = scores[size_t(k - first)] / sum;
        const float *vh = valueCache + k * kvDim + g * headDim;
        for (int64_t e = 0; e < headDim; ++e)
          o[e] += w * vh[e];
      }
    }
  }
  std::vector<float> attn(size_t(T * H));
  if (!project(name("self_attn.o_proj.weight"), H, qDim, attnOut.data(), T,
               attn.data(), error))
    return false;

  // x_attn = (act + rms(attn) + laurel) / sqrt(2); FFN; out = x_attn + ffn.
  std::vector<float> out(size_t(T * H)), ffIn(size_t(T * H));
  for (int64_t t = 0; t < T; ++t) {
    float *a = attn.data() + t * H;
    rmsNorm(a, l.postAttentionNorm.data(), h, eps, a);
    float *o = out.data() + t * H;
    for (int64_t e = 0; e < H; ++e)
      o[e] = (act[t * H + e] + a[e] + laurel[size_t(t * H + e)]) * kInvSqrt2;
    rmsNorm(o, l.preFeedforwardNorm.data(), h, eps, ffIn.data() + t * H);
  }
  std::vector<float> gate(size_t(T * F)), up(size_t(T * F)),
      ff(size_t(T * H));
  if (!project(name("mlp.gate_proj.weight"), F, H, ffIn.data(), T,
               gate.data(), error) ||
      !project(name("mlp.up_proj.weight"), F, H, ffIn.data(), T, up.data(),
               error))
    return false;
  for (int64_t t = 0; t < T; ++t) {
    float *g = gate.data() + t * F;
    if (l.sparse)
      gaussianTopK(g, size_t(F), l.sparsityMultiplier);
    for (int64_t e = 0; e < F; ++e)
      g[e] = geluTanh(g[e]) * up[size_t(t * F + e)];
  }
  if (!project(name("mlp.down_proj.weight"), H, F, gate.data(), T, ff.data(),
               error))
    return false;
  for (int64_t t = 0; t < T; ++t) {
    float *f = ff.data() + t * H;
    rmsNorm(f, l.postFeedforwardNorm.data(), h, eps, f);
    for (int64_t e = 0; e < H; ++e)
      out[size_t(t * H + e)] += f[e];
  }

  // AltUp correct: xs[j] = pred[j] + (W_corr . m + 1)[j] * (out - pred[a]).
  std::vector<float> c(static_cast<size_t>(A));
  for (int64_t t = 0; t < T; ++t) {
    routerModalities(l, out.data() + t * H, m.data());
    for (int64_t j = 0; j < A; ++j)
      c[size_t(j)] =
          dot(l.correctionCoefs.data() + j * A, m.data(), size_t(A)) + 1.0f;
    for (int64_t j = 0; j < A; ++j) {
      const float *pj = pred.data() + (j * T + t) * H;
      float *xj = stream(j, t);
      for (int64_t e = 0; e < H; ++e)
        xj[e] = pj[e] + c[size_t(j)] * (out[size_t(t * H + e)] - act[t * H + e]);
    }
  }

  // Per-layer input injection into streams 1..A-1.
  std::vector<float> first(size_t(T * H)), pleGate(size_t(T * P)),
      injected(size_t(T * H));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t e = 0; e < H; ++e)
      first[size_t(t * H + e)] =
          stream(active, t)[e] *
          (config.altup_correct_scale ? l.correctOutputScale[size_t(e)] : 1.0f);
  if (!project(name("per_layer_input_gate.weight"), P, H, first.data(), T,
               pleGate.data(), error))
    return false;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t e = 0; e < P; ++e) {
      float &g = pleGate[size_t(t * P + e)];
      g = geluTanh(g) * pli[size_t((t * L + i) * P + e)];
    }
  if (!project(name("per_layer_projection.weight"), H, P, pleGate.data(), T,
               injected.data(), error))
    return false;
  for (int64_t t = 0; t < T; ++t) {
    float *v = injected.data() + t * H;
    rmsNorm(v, l.postPerLayerInputNorm.data(), h, eps, v);
    for (int64_t k = 1; k < A; ++k) {
      float *xk = stream(k, t);
      for (int64_t e = 0; e < H; ++e)
        xk[e] += v[e];
    }
  }
  return true;
}

Model::Model(const Gemma3nTextConfig &config, const Weights &weights,
             int64_t maxPositions)
    : impl_(std::make_unique<Impl>(config, weights, maxPositions)) {}

Model::~Model() = default;

bool Model::ok(std::string *error) const {
  if (!impl_->good && error)
    *error = impl_->loadError;
  return impl_->good;
}

void Model::setKvRecords(bool on) { impl_->kvRecords = on; }

void Model::observeProjections(ProjectionObserver observer) {
  impl_->observer = std::move(observer);
}

void Model::reset() { impl_->position = 0; }

int64_t Model::position() const { return impl_->position; }

bool Model::forward(const std::vector<int32_t> &tokens,
                    std::vector<float> &logits, std::string *error) {
  return impl_->forward(tokens, logits, error);
}

} // namespace pccx::reference
