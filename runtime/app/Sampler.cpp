//===- Sampler.cpp - next-token selection ---------------------------------===//

#include "runtime/app/Sampler.h"

#include "hw/numerics/Elementary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

namespace pccx::app {

std::string checkSamplingOptions(const SamplingOptions &o) {
  if (!(o.temperature >= 0) || std::isinf(o.temperature))
    return "temperature must be >= 0";
  if (o.topK < 0)
    return "top-k must be >= 0";
  if (!(o.topP > 0 && o.topP <= 1))
    return "top-p must be in (0, 1]";
  if (!(o.repetitionPenalty > 0) || std::isinf(o.repetitionPenalty))
    return "repetition penalty must be > 0";
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

int32_t Sampler::next(std::vector<float> &logits,
                      const std::vector<int32_t> &seen) {
  const float inf = std::numeric_limits<float>::infinity();
  if (options_.repetitionPenalty != 1.0) {
    std::set<int32_t> distinct(seen.begin(), seen.end());
    float p = float(options_.repetitionPenalty);
    for (int32_t id : distinct)
      if (id >= 0 && size_t(id) < logits.size()) {
        float &z = logits[size_t(id)];
        z = z < 0 ? z * p : z / p;
      }
  }
  auto argmax = [&]() {
    return int32_t(std::max_element(logits.begin(), logits.end()) -
                   logits.begin());
  };
  if (options_.temperature == 0)
    return argmax();
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Descending by logit, ties by id: deterministic. Dividing by T > 0 does
  // not change the order, so it is taken before the division (which may
  // overflow for a tiny T).
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)];
  });
  size_t keep = order.size();
  if (options_.topK > 0)
    keep = std::min(keep, size_t(options_.topK));
  // Softmax over the kept candidates: exp((z - max) / T) in double, finite
  // for every T > 0 (a tiny T gives the argmax probability 1). hw::exp, not
  // libm's: the same seed draws the same token on every machine.
  const double maxLogit = logits[size_t(order[0])];
  std::vector<double> prob(keep);
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    prob[i] = hw::exp((double(logits[size_t(order[i])]) - maxLogit) /
                      options_.temperature);
    sum += prob[i];
  }
  for (float &z : logits)
    z = float(double(z) / options_.temperature);
  for (double &p : prob)
    p /= sum;
  if (options_.topP < 1.0) {
    // Keep the smallest prefix whose mass reaches top_p (always >= 1).
    double mass = 0;
    size_t n = 0;
    while (n < keep) {
      mass += prob[n++];
      if (mass >= options_.topP)
        break;
    }
    keep = n;
    double total = 0;
    for (size_t i = 0; i < keep; ++i)
      total += prob[i];
    for (size_t i = 0; i < keep; ++i)
      prob[i] /= total;
  }
  for (size_t i = keep; i < logits.size(); ++i)
    logits[size_t(order[i])] = -inf;
  double u = uniform(), acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc)
      return order[i];
  }
  return order[keep - 1];
}

} // namespace pccx::app
