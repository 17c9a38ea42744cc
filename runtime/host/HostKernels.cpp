//===- HostKernels.cpp - work the v002 ISA cannot express -----------------===//
//
// The arithmetic follows docs/gemma3n-semantics.md in float32. It is kept
// apart from the compiler's float reference on purpose: the end-to-end tests
// compare the two. Transcendentals are the project's own (hw/numerics/
// Elementary.h), never libm's, so the board computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/host/HostKernels.h"
#include "runtime/host/KernelArgs.h"

#include "hw/numerics/Dot.h"
#include "hw/numerics/Elementary.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/numerics/KvRecords.h"
#include "hw/numerics/Quantize.h"
#include "hw/numerics/Sparsity.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

using nlohmann::json;

namespace pccx::host {

namespace {

float dotf(const float *a, const float *b, int64_t n) {
  return hw::dot(a, b, size_t(n));
}

/// y = x / sqrt(mean(x^2) + eps) * (gain ? gain : 1); y may alias x.
void rms(const float *x, const float *gain, int64_t n, float eps, float *y) {
  float inv = 1.0f / std::sqrt(dotf(x, x, n) / float(n) + eps);
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * inv * (gain ? gain[i] : 1.0f);
}

/// cos and sin of every pair's angle at `position` (interleaved: cos at
/// 2j, sin at 2j + 1). Every head of every layer with the same theta at
/// that position rotates by the same angles, so they are computed once per
/// step and shared; the values are those a per-head computation gives.
/// theta^(2j/d) is evaluated in double, the angle in float as the float
/// reference does, and its cosine and sine rounded once to float.
const float *ropeAngles(HostContext &ctx, int64_t d, int64_t position,
                        double theta) {
  const auto key = std::make_tuple(position, theta, d);
  auto it = ctx.ropeAngles.find(key);
  if (it != ctx.ropeAngles.end())
    return it->second.data();
  if (ctx.ropeAngles.size() >= 256) // a long prefill: keep memory bounded
    ctx.ropeAngles.clear();
  const int64_t half = d / 2;
  std::vector<float> table(size_t(2 * half));
  for (int64_t j = 0; j < half; ++j) {
    float invFreq =
        1.0f / float(hw::pow(theta, double(float(2 * j) / float(d))));
    float angle = float(position) * invFreq;
    table[size_t(2 * j)] = hw::cosf(angle);
    table[size_t(2 * j + 1)] = hw::sinf(angle);
  }
  return ctx.ropeAngles.emplace(key, std::move(table)).first->second.data();
}

/// Rotate-half RoPE: rotates the pairs (j, j + d/2) of `head` by the angles
/// of ropeAngles().
void rope(float *head, int64_t d, const float *angles) {
  const int64_t half = d / 2;
  for (int64_t j = 0; j < half; ++j) {
    const float c = angles[2 * j], s = angles[2 * j + 1];
    float x1 = head[j], x2 = head[j + half];
    head[j] = x1 * c - x2 * s;
    head[j + half] = x2 * c + x1 * s;
  }
}

using Region = KernelArgs::Region;

/// Runs body over [0, rows): on the context's host threads when it has
/// them and the kernel is one splitsRows() names (the list pccx-prof
/// charges by), else on the calling thread.
void forRows(KernelArgs &c, int64_t rows,
             const std::function<void(int64_t, int64_t)> &body) {
  HostContext &ctx = c.ctx();
  if (ctx.splitRows && rows > 1 && splitsRows(c.kernel()))
    ctx.splitRows(rows, body);
  else
    body(0, rows);
}

bool kernelEmbed(KernelArgs &c) {
  using K = abi::param::Embed;
  Region out;
  const GatherTable *table;
  double scale;
  if (!c.region(K::Out, &out) || !c.stepRows(K::Out, out.rows) ||
      !c.gather(K::Table, &table, out.elems) || !c.number(K::Scale, &scale))
    return false;
  for (int64_t r = 0; r < out.rows; ++r) {
    int32_t token = c.ctx().tokens[size_t(r)];
    if (token < 0 || token >= table->rows)
      return c.fail(K::Table, "has no row for token " + std::to_string(token));
    table->readRow(token, out.row(r));
    for (int64_t e = 0; e < out.elems; ++e)
      out.row(r)[e] *= float(scale);
  }
  return true;
}

bool kernelPerLayerInputs(KernelArgs &c) {
  using K = abi::param::PerLayerInputs;
  Region proj, out;
  int64_t layers;
  double eps, projScale, embedScale, inputScale;
  if (!c.integer(K::NumLayers, &layers) || !c.region(K::Proj, &proj) ||
      !c.stepRows(K::Proj, proj.rows))
    return false;
  if (layers <= 0 || proj.elems % layers)
    return c.fail(K::NumLayers, "must be positive and divide the width of "
                                "'proj'");
  int64_t p = proj.elems / layers;
  const GatherTable *table;
  const HostTensor *norm;
  if (!c.region(K::Out, &out, p, proj.rows * layers) ||
      !c.gather(K::Table, &table, proj.elems) ||
      !c.tensor(K::Norm, &norm, 1, p) || !c.number(K::Eps, &eps) ||
      !c.number(K::ProjScale, &projScale) ||
      !c.number(K::EmbedScale, &embedScale) ||
      !c.number(K::InputScale, &inputScale))
    return false;
  std::vector<float> row(size_t(proj.elems)), y(size_t(proj.elems));
  for (int64_t r = 0; r < proj.rows; ++r) {
    int32_t token = c.ctx().tokens[size_t(r)];
    int64_t id = token >= 0 && token < table->rows ? token : 0;
    table->readRow(id, y.data());
    std::copy(proj.row(r), proj.row(r) + proj.elems, row.begin());
    for (int64_t l = 0; l < layers; ++l) {
      float *v = row.data() + l * p;
      for (int64_t e = 0; e < p; ++e)
        v[e] *= float(projScale);
      rms(v, norm->data, p, float(eps), v);
      float *o = out.row(r * layers + l);
      for (int64_t e = 0; e < p; ++e)
        o[e] = (v[e] + y[size_t(l * p + e)] * float(embedScale)) *
               float(inputScale);
    }
  }
  return true;
}

/// The regions of RegionList parameter `param`: `count` of them, each of
/// `rows` rows of `elems`.
template <abi::HostParam P>
bool regionList(KernelArgs &c, abi::ParamId<P> param, int64_t count,
                int64_t elems, int64_t rows, std::vector<Region> *out) {
  const std::vector<abi::HostRegion> *list;
  if (!c.regions(param, &list))
    return false;
  if (int64_t(list->size()) != count)
    return c.fail(param, "must list " + std::to_string(count) + " regions");
  out->assign(list->size(), Region());
  for (size_t i = 0; i < list->size(); ++i)
    if (!c.regionFrom(param, (*list)[i], &(*out)[i], elems, rows))
      return false;
  return true;
}

/// Copies `n` floats of `u` to `out` scaled so that their root mean square
/// is `target`.
void matchMagnitude(const float *u, int64_t n, float target, float *out) {
  float meanSquare = dotf(u, u, n) / float(n);
  float scale = target / std::sqrt(std::max(meanSquare, 1e-5f));
  for (int64_t i = 0; i < n; ++i)
    out[i] = u[i] * scale;
}

bool kernelAltUpInit(KernelArgs &c) {
  using K = abi::param::AltUpInit;
  Region x0, out;
  if (!c.region(K::X0, &x0))
    return false;
  int64_t h = x0.elems, t = x0.rows;
  if (!c.region(K::Out, &out, h) || out.rows % t)
    return c.fail(K::Out, "must have a multiple of x0's rows");
  int64_t a = out.rows / t;
  // The NPU's projections of x0, one region per stream 1 .. A-1.
  std::vector<Region> projected;
  if (!regionList(c, K::Projected, a - 1, h, t, &projected))
    return false;
  std::vector<float> src(static_cast<size_t>(h));
  for (int64_t r = 0; r < t; ++r) {
    std::copy(x0.row(r), x0.row(r) + h, src.begin());
    float target = std::sqrt(dotf(src.data(), src.data(), h) / float(h));
    std::copy(src.begin(), src.end(), out.row(r * a));
    for (int64_t k = 1; k < a; ++k)
      matchMagnitude(projected[size_t(k - 1)].row(r), h, target,
                     out.row(r * a + k));
  }
  return true;
}

/// tanh(router . (rms(x, g) / H)).
void modalities(const HostTensor &norm, const HostTensor &router,
                const float *x, int64_t h, float eps, float *m) {
  std::vector<float> n(static_cast<size_t>(h));
  rms(x, norm.data, h, eps, n.data());
  for (float &v : n)
    v *= 1.0f / float(h);
  for (int64_t k = 0; k < router.rows; ++k)
    m[k] = hw::tanhf(dotf(router.data + k * h, n.data(), h));
}

struct AltUpParams {
  Region streams, out;
  int64_t a = 0, h = 0, t = 0, active = 0;
  const HostTensor *norm = nullptr, *router = nullptr, *coefs = nullptr;
  double eps = 0, clip = 0;
  bool hasClip = false;
};

/// The parameters altup_predict and altup_correct share (K: the kernel's
/// abi::param struct), with `streams` the stack the router reads.
template <typename K, abi::HostParam S>
bool altupParams(KernelArgs &c, abi::ParamId<S> streams, int64_t coefRows,
                 AltUpParams *p) {
  if (!c.region(streams, &p->streams))
    return false;
  if (p->a > 64 || p->streams.rows % p->a)
    return c.fail(streams, "must have num_inputs (at most 64) rows per "
                           "token");
  p->h = p->streams.elems;
  p->t = p->streams.rows / p->a;
  if (!c.region(K::Out, &p->out, p->h, p->streams.rows) ||
      !c.integer(K::Active, &p->active) || p->active < 0 || p->active >= p->a)
    return c.fail(K::Active, "must be a stream index below num_inputs");
  if (!c.tensor(K::RouterNorm, &p->norm, 1, p->h) ||
      !c.tensor(K::Router, &p->router, p->a, p->h) ||
      !c.tensor(K::Coefs, &p->coefs, coefRows, p->a) ||
      !c.number(K::Eps, &p->eps) || !c.given(K::Clip, &p->hasClip))
    return false;
  return !p->hasClip || c.number(K::Clip, &p->clip);
}

bool kernelAltUpPredict(KernelArgs &c) {
  using K = abi::param::AltUpPredict;
  AltUpParams p;
  if (!c.integer(K::NumInputs, &p.a) || p.a <= 0)
    return c.fail(K::NumInputs, "must be positive");
  if (!altupParams<K>(c, K::Streams, p.a * p.a, &p))
    return false;
  const int64_t a = p.a, h = p.h;
  forRows(c, p.t, [&](int64_t first, int64_t end) {
  std::vector<float> m(static_cast<size_t>(a)), coef(size_t(a * a)),
      result(size_t(a * h));
  for (int64_t r = first; r < end; ++r) {
    modalities(*p.norm, *p.router, p.streams.row(r * a + p.active), h,
               float(p.eps), m.data());
    for (int64_t k = 0; k < a * a; ++k) {
      float w[64];
      for (int64_t s = 0; s < a; ++s) {
        float v = p.coefs->data[k * a + s];
        w[s] = p.hasClip ? std::min(float(p.clip), std::max(-float(p.clip), v))
                         : v;
      }
      coef[size_t(k)] = dotf(w, m.data(), a);
    }
    for (int64_t j = 0; j < a; ++j)
      for (int64_t e = 0; e < h; ++e) {
        float acc = 0;
        for (int64_t s = 0; s < a; ++s)
          acc += coef[size_t(j * a + s)] * p.streams.row(r * a + s)[e];
        result[size_t(j * h + e)] = acc + p.streams.row(r * a + j)[e];
      }
    for (int64_t j = 0; j < a; ++j)
      std::copy(result.begin() + j * h, result.begin() + (j + 1) * h,
                p.out.row(r * a + j));
  }
  });
  return true;
}

bool kernelAltUpCorrect(KernelArgs &c) {
  using K = abi::param::AltUpCorrect;
  AltUpParams p;
  Region output;
  if (!c.integer(K::NumInputs, &p.a) || p.a <= 0)
    return c.fail(K::NumInputs, "must be positive");
  if (!altupParams<K>(c, K::Predictions, p.a, &p) ||
      !c.region(K::Output, &output, p.h, p.t))
    return false;
  const int64_t a = p.a, h = p.h;
  forRows(c, p.t, [&](int64_t first, int64_t end) {
  std::vector<float> m(static_cast<size_t>(a)), coef(static_cast<size_t>(a)),
      innovation(static_cast<size_t>(h));
  for (int64_t r = first; r < end; ++r) {
    modalities(*p.norm, *p.router, output.row(r), h, float(p.eps), m.data());
    for (int64_t j = 0; j < a; ++j) {
      float w[64];
      for (int64_t s = 0; s < a; ++s) {
        float v = p.coefs->data[j * a + s];
        w[s] = p.hasClip ? std::min(float(p.clip), std::max(-float(p.clip), v))
                         : v;
      }
      coef[size_t(j)] = dotf(w, m.data(), a) + 1.0f;
    }
    const float *act = p.streams.row(r * a + p.active);
    for (int64_t e = 0; e < h; ++e)
      innovation[size_t(e)] = output.row(r)[e] - act[e];
    for (int64_t j = 0; j < a; ++j) {
      const float *pj = p.streams.row(r * a + j);
      float *o = p.out.row(r * a + j);
      for (int64_t e = 0; e < h; ++e)
        o[e] = pj[e] + coef[size_t(j)] * innovation[size_t(e)];
    }
  }
  });
  return true;
}

bool kernelAltUpCollapse(KernelArgs &c) {
  using K = abi::param::AltUpCollapse;
  Region streams, out;
  if (!c.region(K::Out, &out) || !c.region(K::Streams, &streams, out.elems) ||
      streams.rows % out.rows)
    return c.fail(K::Streams, "must hold num_inputs rows per output row");
  int64_t h = out.elems, a = streams.rows / out.rows;
  // The NPU's un-projections of streams 1 .. A-1.
  std::vector<Region> projected;
  if (!regionList(c, K::Projected, a - 1, h, out.rows, &projected))
    return false;
  std::vector<float> u(static_cast<size_t>(h)), sum(static_cast<size_t>(h));
  for (int64_t r = 0; r < out.rows; ++r) {
    const float *s0 = streams.row(r * a);
    float target = std::sqrt(dotf(s0, s0, h) / float(h));
    std::copy(s0, s0 + h, sum.begin());
    for (int64_t k = 1; k < a; ++k) {
      matchMagnitude(projected[size_t(k - 1)].row(r), h, target, u.data());
      for (int64_t e = 0; e < h; ++e)
        sum[size_t(e)] += u[size_t(e)];
    }
    for (int64_t e = 0; e < h; ++e)
      out.row(r)[e] = sum[size_t(e)] / float(a);
  }
  return true;
}

bool kernelRmsNorm(KernelArgs &c) {
  using K = abi::param::RmsNorm;
  Region in, out;
  double eps;
  const HostTensor *gain = nullptr;
  bool hasGain;
  if (!c.region(K::In, &in) || !c.region(K::Out, &out, in.elems, in.rows) ||
      !c.number(K::Eps, &eps) || !c.given(K::Gain, &hasGain) ||
      (hasGain && !c.tensor(K::Gain, &gain, 1, in.elems)))
    return false;
  forRows(c, in.rows, [&](int64_t first, int64_t end) {
    for (int64_t r = first; r < end; ++r)
      rms(in.row(r), gain ? gain->data : nullptr, in.elems, float(eps),
          out.row(r));
  });
  return true;
}

bool kernelAddRmsNorm(KernelArgs &c) {
  using K = abi::param::AddRmsNorm;
  Region x, y, out;
  double eps;
  const HostTensor *gain = nullptr;
  bool hasGain;
  if (!c.region(K::X, &x) || !c.region(K::Y, &y, x.elems, x.rows) ||
      !c.region(K::Out, &out, x.elems, x.rows) || !c.number(K::Eps, &eps) ||
      !c.given(K::Gain, &hasGain) ||
      (hasGain && !c.tensor(K::Gain, &gain, 1, x.elems)))
    return false;
  forRows(c, x.rows, [&](int64_t first, int64_t end) {
    std::vector<float> n(size_t(x.elems));
    for (int64_t r = first; r < end; ++r) {
      rms(y.row(r), gain ? gain->data : nullptr, x.elems, float(eps),
          n.data());
      for (int64_t e = 0; e < x.elems; ++e)
        out.row(r)[e] = x.row(r)[e] + n[size_t(e)];
    }
  });
  return true;
}

bool kernelCombine(KernelArgs &c) {
  using K = abi::param::Combine;
  Region out;
  double scale;
  if (!c.region(K::Out, &out) || !c.number(K::Scale, &scale))
    return false;
  const std::vector<abi::HostRegion> *inputList;
  if (!c.regions(K::Inputs, &inputList))
    return false;
  const std::vector<abi::HostRegion> &list = *inputList;
  if (list.empty())
    return c.fail(K::Inputs, "must list regions");
  std::vector<Region> inputs(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    if (!c.regionFrom(K::Inputs, list[i], &inputs[i], out.elems, out.rows))
      return false;
  forRows(c, out.rows, [&](int64_t first, int64_t end) {
    std::vector<float> acc(size_t(out.elems));
    for (int64_t r = first; r < end; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (const Region &in : inputs)
        for (int64_t e = 0; e < out.elems; ++e)
          acc[size_t(e)] += in.row(r)[e];
      for (int64_t e = 0; e < out.elems; ++e)
        out.row(r)[e] = acc[size_t(e)] * float(scale);
    }
  });
  return true;
}

bool kernelMul(KernelArgs &c) {
  using K = abi::param::Mul;
  Region a, b, out;
  if (!c.region(K::A, &a) || !c.region(K::B, &b, a.elems, a.rows) ||
      !c.region(K::Out, &out, a.elems, a.rows))
    return false;
  forRows(c, a.rows, [&](int64_t first, int64_t end) {
    for (int64_t r = first; r < end; ++r)
      for (int64_t e = 0; e < a.elems; ++e)
        out.row(r)[e] = a.row(r)[e] * b.row(r)[e];
  });
  return true;
}

bool kernelMulTensor(KernelArgs &c) {
  using K = abi::param::MulTensor;
  Region in, out;
  const HostTensor *t;
  if (!c.region(K::In, &in) || !c.region(K::Out, &out, in.elems, in.rows) ||
      !c.tensor(K::Tensor, &t, 1, in.elems))
    return false;
  forRows(c, in.rows, [&](int64_t first, int64_t end) {
    for (int64_t r = first; r < end; ++r)
      for (int64_t e = 0; e < in.elems; ++e)
        out.row(r)[e] = in.row(r)[e] * t->data[e];
  });
  return true;
}

bool kernelGaussianTopK(KernelArgs &c) {
  using K = abi::param::GaussianTopK;
  Region in, out;
  double multiplier;
  if (!c.region(K::In, &in) || !c.region(K::Out, &out, in.elems, in.rows) ||
      !c.number(K::Multiplier, &multiplier))
    return false;
  const int64_t n = in.elems;
  forRows(c, in.rows, [&](int64_t first, int64_t end) {
    for (int64_t r = first; r < end; ++r) {
      const float *x = in.row(r);
      const float cutoff = hw::gaussianTopKCutoff(x, n, float(multiplier));
      for (int64_t i = 0; i < n; ++i)
        out.row(r)[i] = x[i] - cutoff > 0 ? x[i] - cutoff : 0.0f;
    }
  });
  return true;
}

struct HeadParams {
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  double theta = 0, eps = 0;
};

constexpr int64_t kMaxHeads = 4096, kMaxHeadDim = 65536;

/// The Int parameters bindCall bounds by kMaxHeads (head counts) and by
/// kMaxHeadDim (head widths) rather than by the general 2^24.
bool isHeadCount(abi::HostParam param) {
  using P = abi::HostParam;
  switch (param) {
  case P::QueryNormRope_Heads:
  case P::AttentionScores_Heads:
  case P::AttentionValues_Heads:
  case P::KvNormRope_KvHeads:
  case P::AttentionScores_KvHeads:
  case P::AttentionValues_KvHeads:
    return true;
  default:
    return false;
  }
}
bool isHeadWidth(abi::HostParam param) {
  using P = abi::HostParam;
  switch (param) {
  case P::KvNormRope_HeadDim:
  case P::QueryNormRope_HeadDim:
  case P::AttentionScores_HeadDim:
  case P::AttentionValues_HeadDim:
    return true;
  default:
    return false;
  }
}

/// kv_heads, head_dim and, for a kernel with query heads, heads of
/// kernel K (its abi::param struct); errors name heads, or kv_heads when
/// the kernel has no query heads.
template <typename K, bool kQueryHeads>
bool headParams(KernelArgs &c, HeadParams *p) {
  abi::HostParam named = K::KvHeads;
  if constexpr (kQueryHeads) {
    named = K::Heads;
    if (!c.integer(K::Heads, &p->heads))
      return false;
  }
  if (!c.integer(K::KvHeads, &p->kvHeads) ||
      !c.integer(K::HeadDim, &p->headDim))
    return false;
  if (p->kvHeads <= 0 || p->headDim <= 0 || p->headDim % 2 ||
      (kQueryHeads && (p->heads <= 0 || p->heads % p->kvHeads)))
    return c.fail(named, "are inconsistent (heads a positive multiple of "
                         "kv_heads, head_dim positive and even)");
  // Bounds far above any model keep heads * head_dim (a row width) from
  // overflowing before the regions are checked against it.
  if (p->kvHeads > kMaxHeads || p->headDim > kMaxHeadDim ||
      (kQueryHeads && p->heads > kMaxHeads))
    return c.fail(named, "exceed " + std::to_string(kMaxHeads) + " heads or " +
                             std::to_string(kMaxHeadDim) + " values per head");
  return true;
}

bool kernelKvNormRope(KernelArgs &c) {
  using K = abi::param::KvNormRope;
  HeadParams hp;
  Region k, v, kOut, vOut;
  const HostTensor *kNorm;
  if (!headParams<K, false>(c, &hp) || !c.number(K::Theta, &hp.theta) ||
      !c.number(K::Eps, &hp.eps))
    return false;
  int64_t width = hp.kvHeads * hp.headDim;
  if (!c.region(K::K, &k, width) || !c.stepRows(K::K, k.rows) ||
      !c.region(K::V, &v, width, k.rows) ||
      !c.region(K::KOut, &kOut, width, k.rows) ||
      !c.region(K::VOut, &vOut, width, k.rows) ||
      !c.tensor(K::KNorm, &kNorm, 1, hp.headDim))
    return false;
  for (int64_t r = 0; r < k.rows; ++r)
    for (int64_t g = 0; g < hp.kvHeads; ++g) {
      float *kh = kOut.row(r) + g * hp.headDim;
      rms(k.row(r) + g * hp.headDim, kNorm->data, hp.headDim, float(hp.eps),
          kh);
      rope(kh, hp.headDim,
           ropeAngles(c.ctx(), hp.headDim, c.ctx().positionOf(r), hp.theta));
      rms(v.row(r) + g * hp.headDim, nullptr, hp.headDim, float(hp.eps),
          vOut.row(r) + g * hp.headDim);
    }
  return true;
}

bool kernelQueryNormRope(KernelArgs &c) {
  using K = abi::param::QueryNormRope;
  int64_t heads, headDim;
  double theta, eps;
  Region q, out;
  const HostTensor *qNorm;
  if (!c.integer(K::Heads, &heads) || !c.integer(K::HeadDim, &headDim) ||
      !c.number(K::Theta, &theta) || !c.number(K::Eps, &eps))
    return false;
  if (heads <= 0 || headDim <= 0 || headDim % 2 || heads > kMaxHeads ||
      headDim > kMaxHeadDim)
    return c.fail(K::Heads, "are inconsistent (positive heads, head_dim "
                            "positive and even)");
  if (!c.region(K::Q, &q, heads * headDim) || !c.stepRows(K::Q, q.rows) ||
      !c.region(K::Out, &out, heads * headDim, q.rows) ||
      !c.tensor(K::QNorm, &qNorm, 1, headDim))
    return false;
  std::vector<float> head(static_cast<size_t>(headDim));
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      rms(q.row(r) + h * headDim, qNorm->data, headDim, float(eps),
          head.data());
      rope(head.data(), headDim,
           ropeAngles(c.ctx(), headDim, c.ctx().positionOf(r), theta));
      std::copy(head.begin(), head.end(), out.row(r) + h * headDim);
    }
  return true;
}

bool kernelCacheWrite(KernelArgs &c) {
  using K = abi::param::CacheWrite;
  Region rows;
  StepCache cache;
  if (!c.region(K::Rows, &rows) || !c.stepRows(K::Rows, rows.rows) ||
      !c.cache(K::Cache, &cache, rows.elems))
    return false;
  // A ring shorter than the rows a sequence writes in this step would
  // overwrite positions its first rows still attend to.
  const HostContext &ctx = c.ctx();
  for (int64_t r = 0; r < rows.rows; ++r) {
    const int64_t writes = ctx.lastPositionOf(r) - ctx.positionOf(r) + 1;
    if (writes > cache.slots())
      return c.fail(K::Cache, "holds " + std::to_string(cache.slots()) +
                                  " positions but this step writes " +
                                  std::to_string(writes));
  }
  for (int64_t r = 0; r < rows.rows; ++r)
    cache.row(r).write(ctx.positionOf(r), rows.row(r));
  return true;
}

/// Positions [first, q] a query at q attends to.
int64_t firstVisible(int64_t q, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, q - window + 1) : 0;
}

/// Whether `cache` holds every position a query at q sees (K: the
/// attention kernel's abi::param struct).
template <typename K>
bool cacheCovers(KernelArgs &c, const KvCache &cache, int64_t q,
                 int64_t window) {
  int64_t span = q - firstVisible(q, window) + 1;
  if (span > cache.slots())
    return c.fail(K::Window, "needs " + std::to_string(span) +
                                 " cached positions but the cache has " +
                                 std::to_string(cache.slots()) + " slots");
  return true;
}

bool kernelAttentionScores(KernelArgs &c) {
  using K = abi::param::AttentionScores;
  HeadParams hp;
  Region q;
  const HostTensor *qNorm;
  StepCache keyCache;
  int64_t window;
  if (!headParams<K, true>(c, &hp) || !c.number(K::Theta, &hp.theta) ||
      !c.number(K::Eps, &hp.eps) || !c.integer(K::Window, &window) ||
      window < 0 || !c.region(K::Q, &q, hp.heads * hp.headDim) ||
      !c.stepRows(K::Q, q.rows) || !c.tensor(K::QNorm, &qNorm, 1, hp.headDim) ||
      !c.cache(K::KCache, &keyCache, hp.kvHeads * hp.headDim))
    return false;
  if (!c.ctx().dynamicRecords)
    return c.fail(K::KCache, "has no record queue to write scores to");
  const int64_t groups = hp.heads / hp.kvHeads, d = hp.headDim;
  // The ring must still hold each row's first key after the whole step's
  // keys of its sequence were written.
  const HostContext &ctx = c.ctx();
  for (int64_t r = 0; r < q.rows; ++r) {
    const int64_t span = ctx.lastPositionOf(r) -
                         firstVisible(ctx.positionOf(r), window) + 1;
    if (span > keyCache.slots())
      return c.fail(K::KCache, "holds " + std::to_string(keyCache.slots()) +
                                   " positions but this step spans " +
                                   std::to_string(span));
  }
  std::vector<float> head(static_cast<size_t>(d));
  for (int64_t r = 0; r < q.rows; ++r) {
    const int64_t pos = ctx.positionOf(r);
    const KvCache *keys = &keyCache.row(r);
    if (!cacheCovers<K>(c, *keys, pos, window))
      return false;
    const int64_t first = firstVisible(pos, window), n = pos - first + 1;
    for (int64_t h = 0; h < hp.heads; ++h) {
      rms(q.row(r) + h * d, qNorm->data, d, float(hp.eps), head.data());
      rope(head.data(), d, ropeAngles(c.ctx(), d, pos, hp.theta));
      // Record: N = n scores as per-row scales, K = 1, code 1 in every row,
      // so the GEMV over the constant 1.0 reproduces each score exactly.
      std::vector<uint8_t> record(
          size_t(hw::recordBytes(hw::WeightFormat::Int4, n, 1)), 0);
      const int64_t scaleBytes = hw::recordScaleBytes(n);
      const int64_t g = h / groups;
      for (int64_t k = first; k <= pos; ++k) {
        float s = 0;
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= d; i += 8)
          for (int j = 0; j < 8; ++j)
            acc[j] += head[size_t(i + j)] * keys->at(k, g * d + i + j);
        float tail = 0;
        for (; i < d; ++i)
          tail += head[size_t(i)] * keys->at(k, g * d + i);
        s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
            ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
        std::memcpy(record.data() + 4 * (k - first), &s, 4);
        record[size_t(scaleBytes + 16 * (k - first))] = 0x01;
      }
      c.ctx().dynamicRecords->push_back(std::move(record));
    }
  }
  return true;
}

bool kernelAttentionValues(KernelArgs &c) {
  using K = abi::param::AttentionValues;
  HeadParams hp;
  Region probs, out;
  StepCache valueCache;
  int64_t window;
  // With `row`, probs holds that step row's heads only and only that
  // output row is computed (the compiler goes row by row to keep the
  // window small); without it, every row.
  int64_t only = -1;
  bool hasRow;
  if (!headParams<K, true>(c, &hp) || !c.integer(K::Window, &window) ||
      window < 0 || !c.region(K::Out, &out, hp.heads * hp.headDim) ||
      !c.stepRows(K::Out, out.rows) || !c.given(K::Row, &hasRow) ||
      (hasRow && !c.integer(K::Row, &only)) || only >= out.rows ||
      !c.region(K::Probs, &probs, -1, (only >= 0 ? 1 : out.rows) * hp.heads) ||
      !c.cache(K::VCache, &valueCache, hp.kvHeads * hp.headDim))
    return only >= out.rows ? c.fail(K::Row, "is past the step's rows") : false;
  const int64_t groups = hp.heads / hp.kvHeads, d = hp.headDim;
  for (int64_t r = std::max<int64_t>(only, 0);
       r < (only >= 0 ? only + 1 : out.rows); ++r) {
    const int64_t probRow = only >= 0 ? 0 : r;
    const int64_t pos = c.ctx().positionOf(r);
    const KvCache *values = &valueCache.row(r);
    const int64_t first = firstVisible(pos, window), n = pos - first + 1;
    if (n > probs.elems)
      return c.fail(K::Probs, "holds " + std::to_string(probs.elems) +
                                  " probabilities per row, position " +
                                  std::to_string(pos) + " needs " +
                                  std::to_string(n));
    if (!cacheCovers<K>(c, *values, pos, window))
      return false;
    for (int64_t h = 0; h < hp.heads; ++h) {
      const float *p = probs.row(probRow * hp.heads + h);
      float *o = out.row(r) + h * d;
      std::fill(o, o + d, 0.0f);
      const int64_t g = h / groups;
      for (int64_t k = first; k <= pos; ++k) {
        float w = p[k - first];
        for (int64_t e = 0; e < d; ++e)
          o[e] += w * values->at(k, g * d + e);
      }
    }
  }
  return true;
}

bool kernelLaurelResidual(KernelArgs &c) {
  using K = abi::param::LaurelResidual;
  Region act, attn, xn, low, out;
  const HostTensor *attnGain, *laurelGain;
  double scale, eps;
  if (!c.region(K::Act, &act) ||
      !c.region(K::Attn, &attn, act.elems, act.rows) ||
      !c.region(K::Xn, &xn, act.elems, act.rows) ||
      !c.region(K::Low, &low, act.elems, act.rows) ||
      !c.region(K::Out, &out, act.elems, act.rows) ||
      !c.tensor(K::AttnGain, &attnGain, 1, act.elems) ||
      !c.tensor(K::LaurelGain, &laurelGain, 1, act.elems) ||
      !c.number(K::ResidualScale, &scale) || !c.number(K::Eps, &eps))
    return false;
  const int64_t h = act.elems;
  forRows(c, act.rows, [&](int64_t first, int64_t end) {
    std::vector<float> a(static_cast<size_t>(h)), l(static_cast<size_t>(h));
    for (int64_t r = first; r < end; ++r) {
      rms(attn.row(r), attnGain->data, h, float(eps), a.data());
      rms(low.row(r), laurelGain->data, h, float(eps), l.data());
      for (int64_t e = 0; e < h; ++e)
        out.row(r)[e] = (act.row(r)[e] + xn.row(r)[e]) * float(scale) +
                        a[size_t(e)] + l[size_t(e)];
    }
  });
  return true;
}

bool kernelPleInject(KernelArgs &c) {
  using K = abi::param::PleInject;
  Region streams, projected, out;
  int64_t a;
  const HostTensor *postNorm;
  double eps;
  if (!c.region(K::Streams, &streams) || !c.integer(K::NumInputs, &a) ||
      a <= 0 || streams.rows % a)
    return c.fail(K::Streams, "must hold num_inputs rows per token");
  const int64_t h = streams.elems, t = streams.rows / a;
  // The per-layer input, gated and projected on the NPU: one row per token.
  if (!c.region(K::Projected, &projected, h, t) ||
      !c.region(K::Out, &out, h, streams.rows) ||
      !c.tensor(K::PostNorm, &postNorm, 1, h) || !c.number(K::Eps, &eps))
    return false;
  forRows(c, t, [&](int64_t first, int64_t end) {
    std::vector<float> inj(static_cast<size_t>(h));
    for (int64_t r = first; r < end; ++r) {
      rms(projected.row(r), postNorm->data, h, float(eps), inj.data());
      // Stream 0 is copied only when the result is a separate region; in
      // place it is left untouched.
      for (int64_t j = out.base == streams.base ? 1 : 0; j < a; ++j) {
        const float *s = streams.row(r * a + j);
        float *o = out.row(r * a + j);
        for (int64_t e = 0; e < h; ++e)
          o[e] = j == 0 ? s[e] : s[e] + inj[size_t(e)];
      }
    }
  });
  return true;
}

bool kernelFill(KernelArgs &c) {
  using K = abi::param::Fill;
  Region out;
  double value;
  if (!c.region(K::Out, &out) || !c.number(K::Value, &value))
    return false;
  for (int64_t r = 0; r < out.rows; ++r)
    std::fill(out.row(r), out.row(r) + out.elems, float(value));
  return true;
}

bool kernelEmitLogits(KernelArgs &c) {
  using K = abi::param::EmitLogits;
  Region in;
  int64_t first, column = 0;
  bool hasColumn;
  if (!c.region(K::In, &in) || !c.integer(K::FirstRow, &first) ||
      !c.given(K::FirstColumn, &hasColumn) ||
      (hasColumn && !c.integer(K::FirstColumn, &column)))
    return false;
  HostContext &ctx = c.ctx();
  // A call may give a slice of columns [column, column + elems) of each
  // row (the LM head of a multi-row step goes tile by tile).
  if (column < 0 || column >= ctx.vocab)
    return c.fail(K::FirstColumn, "is outside the vocabulary of " +
                                      std::to_string(ctx.vocab));
  if (!ctx.logits || in.elems > ctx.vocab - column ||
      (!hasColumn && in.elems != ctx.vocab))
    return c.fail(K::In, "has " + std::to_string(in.elems) +
                             " logits per row" +
                             (hasColumn ? " from column " +
                                              std::to_string(column)
                                        : std::string()) +
                             ", the vocabulary has " +
                             std::to_string(ctx.vocab));
  if (first < 0 || first > int64_t(ctx.tokens.size()) - in.rows)
    return c.fail(K::FirstRow, "names rows past the step's " +
                                   std::to_string(ctx.tokens.size()) +
                                   " tokens");
  // A program marked no_logits has no room for them.
  if (int64_t(ctx.logits->size()) < (first + in.rows) * ctx.vocab)
    return c.fail(K::In, "emits logits in a program that has none "
                         "(no_logits)");
  // Logits leave the runtime here: a NaN (refused by the session, but
  // visible to a caller of the kernel) is the canonical one whatever CPU
  // made it.
  for (int64_t r = 0; r < in.rows; ++r)
    std::transform(in.row(r), in.row(r) + in.elems,
                   ctx.logits->begin() + (first + r) * ctx.vocab + column,
                   hw::canonicalizeNan);
  // A row counts as emitted with its last column.
  if (column + in.elems == ctx.vocab)
    ctx.emittedRows += in.rows;
  return true;
}

bool kernelSoftCap(KernelArgs &c) {
  using K = abi::param::SoftCap;
  Region in, out;
  double cap;
  if (!c.region(K::In, &in) || !c.region(K::Out, &out, in.elems, in.rows) ||
      !c.number(K::Cap, &cap))
    return false;
  if (!(cap > 0))
    return c.fail(K::Cap, "must be a positive number");
  const float capf = float(cap);
  auto softcap = [capf](float x) { return hw::tanhf(x / capf) * capf; };
  HostContext::SoftCapTable &table = c.ctx().softCapTable;
  if (table.cap != capf || table.values.empty()) {
    table.values.resize(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits)
      table.values[bits] = softcap(hw::bf16ToFloat(uint16_t(bits)));
    table.cap = capf;
  }
  const float *values = table.values.data();
  for (int64_t r = 0; r < in.rows; ++r) {
    const float *x = in.row(r);
    float *y = out.row(r);
    for (int64_t e = 0; e < in.elems; ++e) {
      uint32_t bits;
      std::memcpy(&bits, &x[e], 4);
      // A BF16 value (low half zero) is looked up; anything else (fp32
      // reference numerics) is computed.
      y[e] = (bits & 0xFFFFu) ? softcap(x[e]) : values[bits >> 16];
    }
  }
  return true;
}

} // namespace

void GatherTable::readRow(int64_t row, float *out) const {
  if (!quantized) {
    std::memcpy(out, values + row * cols, size_t(cols) * 4);
    return;
  }
  const size_t rowBytes = hw::packedRowBytes(format, size_t(cols));
  hw::QuantScheme scheme;
  scheme.group = group;
  const int64_t groups = hw::groupCount(scheme, cols);
  hw::unpackRowGroups(format, codes + size_t(row) * rowBytes, size_t(cols),
                      group, scales + row * groups, out);
}

KvStorage hostStorage(KvDtype dtype) {
  switch (dtype) {
  case KvDtype::F16:
    return KvStorage::F16;
  case KvDtype::F32:
    return KvStorage::F32;
  case KvDtype::Int8:
    return KvStorage::Int8;
  }
  return KvStorage::F32;
}

KvCache::KvCache(int64_t slots, int64_t width, KvStorage dtype)
    : slots_(slots), width_(width), dtype_(dtype) {
  const size_t n = size_t(slots * width);
  switch (dtype) {
  case KvStorage::F32:
    full_.assign(n, 0.0f);
    break;
  case KvStorage::F16:
    half_.assign(n, 0);
    break;
  case KvStorage::Int8:
    codes_.assign(n, 0);
    full_.assign(size_t(slots), 0.0f);
    break;
  case KvStorage::KeyRecords:
  case KvStorage::ValueRecords:
    break; // the other constructor
  }
}

KvCache::KvCache(int64_t slots, int64_t width, int64_t heads, KvStorage layout,
                 uint8_t *memory)
    : slots_(slots), width_(width), heads_(heads), dtype_(layout),
      memory_(memory) {
  clear();
}

int64_t KvCache::recordBytes() const {
  return hw::cacheRecordBytes(dtype_ == KvStorage::KeyRecords, slots_,
                              width_ / heads_);
}

void KvCache::keepExact() {
  exact_.assign(size_t(slots_ * width_), 0.0f);
}

void KvCache::clear() {
  std::fill(exact_.begin(), exact_.end(), 0.0f);
  if (!records()) {
    std::fill(full_.begin(), full_.end(), 0.0f);
    std::fill(half_.begin(), half_.end(), uint16_t(0));
    std::fill(codes_.begin(), codes_.end(), int8_t(0));
    return;
  }
  const int64_t headDim = width_ / heads_;
  for (int64_t g = 0; g < heads_; ++g) {
    uint8_t *r = memory_ + g * recordBytes();
    if (dtype_ == KvStorage::KeyRecords)
      hw::initKeyRecord(r, slots_, headDim);
    else
      hw::initValueRecord(r, slots_, headDim);
  }
}

void KvCache::write(int64_t position, const float *row) {
  const int64_t slot = position % slots_, base = slot * width_;
  const int64_t headDim = width_ / heads_;
  switch (dtype_) {
  case KvStorage::KeyRecords:
    for (int64_t g = 0; g < heads_; ++g) {
      hw::writeKeySlot(memory_ + g * recordBytes(), slots_, headDim, slot,
                       row + g * headDim);
      if (!exact_.empty())
        std::copy(row + g * headDim, row + (g + 1) * headDim,
                  exact_.begin() + (g * slots_ + slot) * headDim);
    }
    break;
  case KvStorage::ValueRecords:
    for (int64_t g = 0; g < heads_; ++g) {
      hw::writeValueSlot(memory_ + g * recordBytes(), slots_, headDim, slot,
                         row + g * headDim);
      if (!exact_.empty())
        for (int64_t d = 0; d < headDim; ++d)
          exact_[size_t((g * headDim + d) * slots_ + slot)] = row[g * headDim + d];
    }
    break;
  case KvStorage::F32:
    std::copy(row, row + width_, full_.begin() + base);
    break;
  case KvStorage::F16:
    for (int64_t e = 0; e < width_; ++e)
      half_[size_t(base + e)] = hw::floatToF16(row[e]);
    break;
  case KvStorage::Int8:
    full_[size_t(slot)] =
        hw::quantizeRowInt8(row, size_t(width_), codes_.data() + base);
    break;
  }
}

float KvCache::at(int64_t position, int64_t column) const {
  const int64_t slot = position % slots_;
  const size_t i = size_t(slot * width_ + column);
  const int64_t headDim = width_ / heads_, head = column / headDim,
                d = column % headDim;
  switch (dtype_) {
  case KvStorage::KeyRecords: {
    const uint8_t *r = record(head);
    float scale;
    std::memcpy(&scale, r + 4 * slot, 4);
    const int64_t stride = hw::recordRowStride(hw::WeightFormat::Int8, headDim);
    return float(int8_t(r[hw::recordScaleBytes(slots_) + slot * stride + d])) *
           scale;
  }
  case KvStorage::ValueRecords: {
    const int64_t stride = hw::recordRowStride(hw::WeightFormat::Int8, slots_);
    return float(int8_t(
               record(head)[hw::recordScaleBytes(headDim) + d * stride + slot])) *
           hw::valueRecordScale(headDim);
  }
  case KvStorage::F16:
    return hw::f16ToFloat(half_[i]);
  case KvStorage::Int8:
    return float(codes_[i]) * full_[size_t(slot)];
  case KvStorage::F32:
    break;
  }
  return full_[i];
}

void KvCache::read(int64_t position, float *row) const {
  for (int64_t e = 0; e < width_; ++e)
    row[e] = at(position, e);
}

namespace {

bool regionOf(const json &j, abi::HostRegion *out) {
  if (!j.is_array() || j.size() != 4)
    return false;
  for (const json &v : j)
    if (!v.is_number_integer())
      return false;
  *out = {j[0].get<int64_t>(), j[1].get<int64_t>(), j[2].get<int64_t>(),
          j[3].get<int64_t>()};
  return true;
}

} // namespace

bool bindCall(const std::string &kernel, const json &params,
              const BindTables &tables, BoundCall *out, std::string *error) {
  abi::HostKernel id;
  if (!abi::lookupKernel(kernel, id)) {
    *error = "unknown host kernel '" + kernel +
             "' (known: " + abi::kernelNames() + ")";
    return false;
  }
  auto fail = [&](const std::string &key, const std::string &why) {
    *error = "host kernel '" + kernel + "': parameter '" + key + "' " + why;
    return false;
  };
  if (!params.is_object()) {
    *error = "host kernel '" + kernel + "': parameters must be an object";
    return false;
  }
  for (auto &[key, value] : params.items())
    if (!abi::lookupParam(id, key))
      return fail(key, "is not a parameter of this kernel");
  const abi::KernelInfo &info = abi::kernelInfo(id);
  BoundCall call;
  call.kernel = id;
  call.args.resize(info.params.size());
  for (const abi::ParamInfo &p : info.params) {
    BoundArg &a = call.args[p.slot];
    auto it = params.find(p.key);
    if (it == params.end()) {
      if (p.required)
        return fail(p.key, "is missing");
      continue;
    }
    const json &v = *it;
    const std::string expected =
        std::string("must be ") + abi::paramKindName(p.kind);
    a.present = true;
    switch (p.kind) {
    case abi::ParamKind::Region:
      if (!regionOf(v, &a.region))
        return fail(p.key, expected);
      break;
    case abi::ParamKind::RegionList:
      if (!v.is_array())
        return fail(p.key, expected);
      for (const json &r : v) {
        abi::HostRegion region;
        if (!regionOf(r, &region))
          return fail(p.key, expected);
        a.regions.push_back(region);
      }
      break;
    case abi::ParamKind::Int: {
      if (!v.is_number_integer())
        return fail(p.key, expected);
      // Every integer parameter is a count or an index of a model's shape
      // (heads, head_dim, window, layers, inputs, rows). Bounding it here,
      // where every tool binds, keeps the profiler's and the kernels' loops
      // over it finite whatever the bundle says; the kernels check exact
      // consistency when they run.
      const int64_t limit = isHeadCount(p.id)   ? kMaxHeads
                            : isHeadWidth(p.id) ? kMaxHeadDim
                                                : int64_t(1) << 24;
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
        return fail(p.key, expected + " from 0 to " + std::to_string(limit));
      a.integer = v.get<int64_t>();
      if (a.integer < 0 || a.integer > limit)
        return fail(p.key, expected + " from 0 to " + std::to_string(limit));
      break;
    }
    case abi::ParamKind::Float:
      // Kernels compute in float: a value float cannot hold would be
      // undefined to convert.
      if (!v.is_number() || !std::isfinite(v.get<double>()) ||
          std::fabs(v.get<double>()) > double(FLT_MAX))
        return fail(p.key, expected + " within the range of a 32-bit float");
      a.number = v.get<double>();
      break;
    case abi::ParamKind::Tensor:
    case abi::ParamKind::TensorList: {
      std::vector<json> names;
      if (p.kind == abi::ParamKind::Tensor)
        names.push_back(v);
      else if (v.is_array())
        names.assign(v.begin(), v.end());
      else
        return fail(p.key, expected);
      for (const json &n : names) {
        if (!n.is_string())
          return fail(p.key, expected);
        auto t = tables.tensors
                     ? tables.tensors->find(n.get<std::string>())
                     : std::map<std::string, HostTensor>::const_iterator();
        if (!tables.tensors || t == tables.tensors->end())
          return fail(p.key, "names host tensor '" + n.get<std::string>() +
                                 "', which the bundle does not have");
        a.names.push_back(n.get<std::string>());
        a.tensors.push_back(&t->second);
      }
      break;
    }
    case abi::ParamKind::Cache: {
      if (!v.is_string())
        return fail(p.key, expected);
      const std::string name = v.get<std::string>();
      auto c = tables.caches ? tables.caches->find(name)
                             : std::map<std::string, int>::const_iterator();
      if (!tables.caches || c == tables.caches->end())
        return fail(p.key, "names KV cache '" + name +
                               "', which the manifest does not declare");
      a.names.push_back(name);
      a.cache = c->second;
      break;
    }
    case abi::ParamKind::Gather: {
      if (!v.is_string())
        return fail(p.key, expected);
      const std::string name = v.get<std::string>();
      auto g = tables.gathers
                   ? tables.gathers->find(name)
                   : std::map<std::string, GatherTable>::const_iterator();
      if (!tables.gathers || g == tables.gathers->end())
        return fail(p.key, "names gather table '" + name +
                               "', which the bundle does not have");
      a.names.push_back(name);
      a.gather = &g->second;
      break;
    }
    }
    if (p.role != abi::ParamRole::Arg) {
      std::vector<abi::HostRegion> &side =
          p.role == abi::ParamRole::In ? call.inputs : call.outputs;
      if (p.kind == abi::ParamKind::Region)
        side.push_back(a.region);
      else
        side.insert(side.end(), a.regions.begin(), a.regions.end());
    }
  }
  *out = std::move(call);
  return true;
}

bool splitsRows(abi::HostKernel kernel) {
  using K = abi::HostKernel;
  switch (kernel) {
  case K::AltUpPredict:
  case K::AltUpCorrect:
  case K::RmsNorm:
  case K::AddRmsNorm:
  case K::Combine:
  case K::Mul:
  case K::MulTensor:
  case K::GaussianTopK:
  case K::LaurelResidual:
  case K::PleInject:
    return true;
  default:
    return false;
  }
}

bool runKernel(const BoundCall &call, HostContext &context,
               std::string *error) {
  using Fn = bool (*)(KernelArgs &);
  static const Fn kernels[] = {
#define PCCX_HOST_KERNEL(Id, Name) kernel##Id,
#include "hw/abi/HostKernels.def"
  };
  KernelArgs c(call, context, error);
  return kernels[unsigned(call.kernel)](c);
}

bool runKernel(const std::string &name, const json &params,
               const BindTables &tables, HostContext &context,
               std::string *error) {
  BoundCall call;
  return bindCall(name, params, tables, &call, error) &&
         runKernel(call, context, error);
}

} // namespace pccx::host
