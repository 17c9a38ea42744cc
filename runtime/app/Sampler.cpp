//===- Sampler.cpp - next-token selection ---------------------------------===//
//
// The cost of a sampled token does not depend on sorting the vocabulary:
// candidates are chosen by partial selection (std::nth_element) and only the
// kept ones are sorted. One exp per vocabulary entry remains, for the
// softmax's normalizer.
//
//===----------------------------------------------------------------------===//

#include "runtime/app/Sampler.h"
#include "runtime/grammar/TokenMask.h"

#include "hw/numerics/Elementary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace pccx::app {

std::string checkSamplingOptions(const SamplingOptions &o) {
  if (!(o.temperature >= 0) || std::isinf(o.temperature))
    return "temperature must be >= 0";
  if (o.topK < 0)
    return "top-k must be >= 0";
  if (!(o.topP > 0 && o.topP <= 1))
    return "top-p must be in (0, 1]";
  if (!(o.minP >= 0 && o.minP <= 1))
    return "min-p must be in [0, 1]";
  if (!(o.repetitionPenalty > 0) || std::isinf(o.repetitionPenalty))
    return "repetition penalty must be > 0";
  if (!(o.presencePenalty >= -2 && o.presencePenalty <= 2))
    return "presence penalty must be in [-2, 2]";
  if (!(o.frequencyPenalty >= -2 && o.frequencyPenalty <= 2))
    return "frequency penalty must be in [-2, 2]";
  return {};
}

Sampler::Sampler(const SamplingOptions &options)
    : options_(options), state_(options.seed ^ 0x9e3779b97f4a7c15ull) {}

double Sampler::uniform() {
  // splitmix64: the same sequence everywhere.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

void Sampler::applyPenalties(std::vector<float> &logits,
                             const std::vector<int32_t> &seen) const {
  const bool repetition = options_.repetitionPenalty != 1.0,
             additive = options_.presencePenalty != 0.0 ||
                        options_.frequencyPenalty != 0.0;
  if (!repetition && !additive)
    return;
  std::unordered_map<int32_t, int64_t> counts;
  for (int32_t id : seen)
    if (id >= 0 && size_t(id) < logits.size())
      ++counts[id];
  // Applied in id order, so the result does not depend on the map's.
  std::vector<std::pair<int32_t, int64_t>> ids(counts.begin(), counts.end());
  std::sort(ids.begin(), ids.end());
  const float p = float(options_.repetitionPenalty);
  for (const auto &[id, count] : ids) {
    float &z = logits[size_t(id)];
    if (repetition) // Hugging Face: once per distinct id
      z = z < 0 ? z * p : z / p;
    if (additive) // OpenAI: frequency per occurrence, presence once
      z = float(double(z) - double(count) * options_.frequencyPenalty -
                options_.presencePenalty);
  }
}

bool Sampler::applyConstraint(std::vector<float> &logits) {
  if (!constraint_ || constraint_->mask(logits.data(), logits.size()))
    return true;
  stuck_ = true;
  return false;
}

std::string Sampler::constraintError() const {
  return constraint_ ? constraint_->error() : std::string();
}

int32_t Sampler::chosen(int32_t token) {
  if (constraint_)
    constraint_->accept(token);
  return token;
}

int32_t Sampler::next(std::vector<float> &logits,
                      const std::vector<int32_t> &seen) {
  if (!applyConstraint(logits))
    return constraint_->endToken();
  Candidates c;
  if (candidates(logits, seen, &c))
    return chosen(c.best);
  return chosen(draw(c, -1));
}

int32_t Sampler::verify(std::vector<float> &logits,
                        const std::vector<int32_t> &seen, int32_t draft) {
  if (!applyConstraint(logits))
    return constraint_->endToken();
  Candidates c;
  if (candidates(logits, seen, &c))
    return chosen(c.best);
  // The draft was proposed with certainty (q(draft) = 1): accepted with
  // probability p(draft); otherwise the token comes from p without it,
  // renormalized, max(p - q, 0). The result is distributed as p.
  double mass = 0, p = 0;
  for (size_t i = 0; i < c.weights.size(); ++i) {
    mass += c.weights[i];
    if ((c.all ? int32_t(i) : c.ids[i]) == draft)
      p = c.weights[i];
  }
  if (p > 0 && uniform() * mass < p)
    return chosen(draft);
  return chosen(draw(c, draft));
}

int32_t Sampler::draw(const Candidates &c, int32_t excluded) {
  auto idAt = [&](size_t i) { return c.all ? int32_t(i) : c.ids[i]; };
  double mass = 0;
  for (size_t i = 0; i < c.weights.size(); ++i)
    if (idAt(i) != excluded)
      mass += c.weights[i];
  if (!(mass > 0))
    return c.best;
  const double u = uniform() * mass;
  double acc = 0;
  for (size_t i = 0; i < c.weights.size(); ++i) {
    if (idAt(i) == excluded)
      continue;
    acc += c.weights[i];
    if (u < acc)
      return idAt(i);
  }
  // Rounding left u at the very top: the last candidate with weight.
  for (size_t i = c.weights.size(); i-- > 0;)
    if (c.weights[i] > 0 && idAt(i) != excluded)
      return idAt(i);
  return c.best;
}

bool Sampler::candidates(std::vector<float> &logits,
                         const std::vector<int32_t> &seen, Candidates *out) {
  const float inf = std::numeric_limits<float>::infinity();
  applyPenalties(logits, seen);
  const size_t vocab = logits.size();
  if (options_.temperature == 0) {
    out->best = int32_t(std::max_element(logits.begin(), logits.end()) -
                        logits.begin());
    return true;
  }

  // Descending by logit, ties by id (a NaN ranks last): a strict total
  // order, so every selection below is deterministic. Dividing by T > 0 does
  // not change the order, so it is taken before the division (which may
  // overflow for a tiny T).
  auto key = [&](int32_t id) {
    const float z = logits[size_t(id)];
    return std::isnan(z) ? -inf : z;
  };
  auto before = [&](int32_t a, int32_t b) {
    const float za = key(a), zb = key(b);
    return za > zb || (za == zb && a < b);
  };
  int32_t best = 0;
  for (size_t id = 1; id < vocab; ++id)
    if (before(int32_t(id), best))
      best = int32_t(id);
  const double maxLogit = key(best);
  // exp((z - max) / T) in double: finite for every T > 0 (a tiny T gives
  // the best id weight 1 and every other 0). hw::exp, not libm's: the same
  // seed draws the same token on every machine.
  auto weightOf = [&](int32_t id) {
    return hw::exp((double(key(id)) - maxLogit) / options_.temperature);
  };

  // The candidates, as a list sorted by `before`, or (`all`) every id in id
  // order; `weights` beside them.
  std::vector<int32_t> ids;
  std::vector<double> weights;
  bool all = true;
  double total = 0;
  if (options_.topK > 0 && size_t(options_.topK) < vocab) {
    ids.resize(vocab);
    for (size_t i = 0; i < vocab; ++i)
      ids[i] = int32_t(i);
    const size_t k = size_t(options_.topK);
    std::nth_element(ids.begin(), ids.begin() + k, ids.end(), before);
    ids.resize(k);
    std::sort(ids.begin(), ids.end(), before);
    all = false;
    for (int32_t id : ids)
      weights.push_back(weightOf(id));
  } else {
    weights.resize(vocab);
    for (size_t id = 0; id < vocab; ++id)
      weights[id] = weightOf(int32_t(id));
  }
  for (double w : weights)
    total += w;

  // Makes the candidates a sorted list of those whose weight is at least
  // `floor` (all of them for floor 0).
  auto sortedAbove = [&](double floor) {
    if (!all) {
      size_t n = 0;
      while (n < ids.size() && (n == 0 || weights[n] >= floor))
        ++n;
      ids.resize(n);
      weights.resize(n);
      return;
    }
    std::vector<int32_t> picked;
    for (size_t id = 0; id < vocab; ++id)
      if (int32_t(id) == best || weights[id] >= floor)
        picked.push_back(int32_t(id));
    std::sort(picked.begin(), picked.end(), before);
    std::vector<double> w;
    for (int32_t id : picked)
      w.push_back(weights[size_t(id)]);
    ids = std::move(picked);
    weights = std::move(w);
    all = false;
  };

  // Top-p: the smallest prefix (at least one id) of the sorted candidates
  // whose mass reaches top_p of theirs. Sorting every id is rarely needed:
  // the prefix lies among those within a factor e^-c of the best, c growing
  // until they hold the mass.
  if (options_.topP < 1.0) {
    const double target = options_.topP * total;
    if (all) {
      double floor = 0;
      for (double c = 16; c < 1024; c *= 2) {
        const double f = hw::exp(-c);
        double above = 0;
        for (double w : weights)
          if (w >= f)
            above += w;
        if (above >= target) {
          floor = f;
          break;
        }
      }
      sortedAbove(floor);
    }
    double mass = 0;
    size_t n = 0;
    while (n < ids.size() && mass < target)
      mass += weights[n++];
    n = std::max<size_t>(n, 1);
    ids.resize(n);
    weights.resize(n);
  }
  // Min-p: ids at least min_p times as likely as the best one (weight 1).
  if (options_.minP > 0)
    sortedAbove(options_.minP);

  // The warped logits (temperature applied, the rest -inf), as Hugging
  // Face's warpers leave them.
  if (all) {
    for (float &z : logits)
      z = float(double(z) / options_.temperature);
  } else {
    std::vector<float> kept(ids.size());
    for (size_t i = 0; i < ids.size(); ++i)
      kept[i] = float(double(logits[size_t(ids[i])]) / options_.temperature);
    std::fill(logits.begin(), logits.end(), -inf);
    for (size_t i = 0; i < ids.size(); ++i)
      logits[size_t(ids[i])] = kept[i];
  }

  out->best = best;
  out->all = all;
  out->ids = std::move(ids);
  out->weights = std::move(weights);
  return false;
}

} // namespace pccx::app
