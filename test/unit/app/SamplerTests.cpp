//===- SamplerTests.cpp - next-token selection ----------------------------===//

#include "runtime/app/Sampler.h"

#include "hw/numerics/Elementary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

using namespace pccx;
using namespace pccx::app;

namespace {

SamplingOptions sampling(double temperature, int64_t topK = 0,
                         double topP = 1.0, double penalty = 1.0,
                         uint64_t seed = 0) {
  SamplingOptions o;
  o.temperature = temperature;
  o.topK = topK;
  o.topP = topP;
  o.repetitionPenalty = penalty;
  o.seed = seed;
  return o;
}

TEST(Sampler, OptionChecks) {
  EXPECT_EQ(checkSamplingOptions(SamplingOptions()), "");
  EXPECT_EQ(checkSamplingOptions(sampling(-0.5)), "temperature must be >= 0");
  EXPECT_EQ(checkSamplingOptions(sampling(1, -1)), "top-k must be >= 0");
  EXPECT_EQ(checkSamplingOptions(sampling(1, 0, 0.0)),
            "top-p must be in (0, 1]");
  EXPECT_EQ(checkSamplingOptions(sampling(1, 0, 1.5)),
            "top-p must be in (0, 1]");
  EXPECT_EQ(checkSamplingOptions(sampling(1, 0, 1, 0)),
            "repetition penalty must be > 0");
  EXPECT_EQ(checkSamplingOptions(sampling(1, 0, 1, -1.5)),
            "repetition penalty must be > 0");
  EXPECT_EQ(checkSamplingOptions(sampling(NAN)), "temperature must be >= 0");
  EXPECT_EQ(checkSamplingOptions(sampling(0.7, 40, 0.95, 1.1, 3)), "");
}

TEST(Sampler, GreedyIsArgmaxFirstOnTies) {
  Sampler s(sampling(0));
  std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(s.next(logits, {}), 1);
}

TEST(Sampler, RepetitionPenaltyOncePerDistinctId) {
  Sampler s(sampling(0, 0, 1, 2.0));
  std::vector<float> logits = {4.0f, -2.0f, 3.0f, 1.0f};
  // Ids 0 and 1 seen (0 twice): 4 -> 2, -2 -> -4; 2 and 3 untouched.
  EXPECT_EQ(s.next(logits, {0, 1, 0}), 2);
  EXPECT_EQ(logits, (std::vector<float>{2.0f, -4.0f, 3.0f, 1.0f}));
}

TEST(Sampler, PenaltyIgnoresIdsOutsideTheVocabulary) {
  Sampler s(sampling(0, 0, 1, 4.0));
  std::vector<float> logits = {1.0f, -1.0f, 2.0f};
  // Only id 2 is a real id: 2 / 4 = 0.5, which drops it below id 0.
  EXPECT_EQ(s.next(logits, {-1, 3, 7, 2}), 0);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -1.0f, 0.5f}));
}

TEST(Sampler, TopKKeepsTheBestKAfterTemperature) {
  // T = 2 halves the logits; top-2 keeps ids 1 and 2, in ratio e : 1.
  Sampler s(sampling(2.0, 2, 1.0, 1.0, 5));
  int ones = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits = {1.0f, 4.0f, 2.0f};
    int32_t id = s.next(logits, {});
    ASSERT_TRUE(id == 1 || id == 2) << id;
    ones += id == 1;
    if (i == 0) {
      EXPECT_EQ(logits[1], 2.0f);
      EXPECT_EQ(logits[2], 1.0f);
      EXPECT_TRUE(std::isinf(logits[0]) && logits[0] < 0);
    }
  }
  EXPECT_NEAR(double(ones) / n, std::exp(1.0) / (std::exp(1.0) + 1), 0.03);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingTheMass) {
  // Probabilities 0.5, 0.3, 0.2 with top-p 0.7: 0.5 < 0.7 <= 0.8, so ids 0
  // and 1 survive, renormalised to 0.625 / 0.375.
  Sampler s(sampling(1.0, 0, 0.7, 1.0, 11));
  int zeros = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits = {float(std::log(0.5)), float(std::log(0.3)),
                                 float(std::log(0.2))};
    int32_t id = s.next(logits, {});
    ASSERT_TRUE(id == 0 || id == 1) << id;
    zeros += id == 0;
    if (i == 0) {
      EXPECT_TRUE(std::isinf(logits[2]) && logits[2] < 0);
    }
  }
  EXPECT_NEAR(double(zeros) / n, 0.625, 0.03);
}

TEST(Sampler, TopKOneAndSmallTopPAreGreedy) {
  std::vector<float> base = {0.1f, 2.0f, 1.9f, -3.0f};
  Sampler k1(sampling(1.0, 1, 1.0, 1.0, 42));
  Sampler p(sampling(1.0, 0, 0.01, 1.0, 42));
  for (int i = 0; i < 50; ++i) {
    std::vector<float> a = base, b = base;
    EXPECT_EQ(k1.next(a, {}), 1);
    EXPECT_EQ(p.next(b, {}), 1);
  }
}

TEST(Sampler, SeedDeterminesTheSequence) {
  auto draw = [](uint64_t seed) {
    Sampler s(sampling(1.0, 0, 1.0, 1.0, seed));
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) {
      std::vector<float> logits(16, 0.0f); // uniform over 16 ids
      ids.push_back(s.next(logits, {}));
    }
    return ids;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

TEST(Sampler, DrawsFollowTheDistribution) {
  // Logits log 3 and log 1: probabilities 0.75 and 0.25.
  Sampler s(sampling(1.0, 0, 1.0, 1.0, 1234));
  int zeros = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits = {float(std::log(3.0)), 0.0f};
    zeros += s.next(logits, {}) == 0;
  }
  EXPECT_NEAR(double(zeros) / n, 0.75, 0.02);
}

TEST(Sampler, TemperatureSharpens) {
  // At T = 0.25 the 0.75 / 0.25 split becomes 81 / 1: almost always id 0.
  Sampler s(sampling(0.25, 0, 1.0, 1.0, 99));
  int zeros = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<float> logits = {float(std::log(3.0)), 0.0f};
    zeros += s.next(logits, {}) == 0;
  }
  EXPECT_GT(zeros, 1940);
}

TEST(Sampler, TinyTemperatureIsGreedy) {
  // exp((z - max) / T) stays finite for every T > 0, so a tiny temperature
  // picks the argmax instead of falling through to the last candidate.
  for (double t : {1e-30, 1e-39, 1e-50, 1e-300}) {
    Sampler s(sampling(t, 0, 1.0, 1.0, 5));
    std::vector<float> logits = {2.0f, 1.0f, -1.0f};
    EXPECT_EQ(s.next(logits, {}), 0) << t;
  }
}

TEST(Sampler, OptionChecksOfMinPAndOpenAiPenalties) {
  SamplingOptions o;
  o.minP = 1.5;
  EXPECT_EQ(checkSamplingOptions(o), "min-p must be in [0, 1]");
  o.minP = 0.1;
  o.presencePenalty = 2.5;
  EXPECT_EQ(checkSamplingOptions(o), "presence penalty must be in [-2, 2]");
  o.presencePenalty = 0;
  o.frequencyPenalty = -3;
  EXPECT_EQ(checkSamplingOptions(o), "frequency penalty must be in [-2, 2]");
  o.frequencyPenalty = NAN;
  EXPECT_EQ(checkSamplingOptions(o), "frequency penalty must be in [-2, 2]");
}

TEST(Sampler, PresenceOncePerIdFrequencyPerOccurrence) {
  SamplingOptions o;
  o.presencePenalty = 0.5;
  o.frequencyPenalty = 0.25;
  Sampler s(o);
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.0f};
  // id 2 three times, id 0 once; 9 is outside the vocabulary.
  EXPECT_EQ(s.next(logits, {2, 0, 2, 9, 2}), 1);
  EXPECT_EQ(logits, (std::vector<float>{0.25f, 2.0f, 1.75f, 0.0f}));
}

/// The kept ids the warpers of Hugging Face's generate() leave, computed the
/// plain way: sort every id, then top-k, top-p, min-p.
std::vector<int32_t> keptByFullSort(const std::vector<float> &logits,
                                    const SamplingOptions &o) {
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)];
  });
  size_t keep = order.size();
  if (o.topK > 0)
    keep = std::min(keep, size_t(o.topK));
  std::vector<double> w(keep);
  double total = 0;
  for (size_t i = 0; i < keep; ++i)
    total += w[i] = pccx::hw::exp((double(logits[size_t(order[i])]) -
                              logits[size_t(order[0])]) /
                             o.temperature);
  if (o.topP < 1) {
    double mass = 0;
    size_t n = 0;
    while (n < keep && mass < o.topP * total)
      mass += w[n++];
    keep = std::max<size_t>(n, 1);
  }
  if (o.minP > 0) {
    size_t n = 1;
    while (n < keep && w[n] >= o.minP)
      ++n;
    keep = n;
  }
  order.resize(keep);
  std::sort(order.begin(), order.end());
  return order;
}

// Partial selection keeps exactly the ids a full sort keeps, over peaked
// and flat distributions (the flat ones make top-p sort almost everything)
// and a vocabulary as large as Gemma's.
TEST(Sampler, PartialSelectionKeepsWhatAFullSortKeeps) {
  std::mt19937 rng(11);
  for (size_t vocab : {size_t(7), size_t(1000), size_t(262144)})
    for (double spread : {0.05, 3.0, 12.0})
      for (int setting = 0; setting < 6; ++setting) {
        if (vocab > 1000 && spread < 1) // as flat as the small ones; slow
          continue;
        std::normal_distribution<float> normal(0.0f, float(spread));
        std::vector<float> logits(vocab);
        for (float &z : logits)
          z = normal(rng);
        logits[vocab / 3] = logits[vocab / 2]; // a tie
        SamplingOptions o;
        o.temperature = setting % 2 ? 0.7 : 1.3;
        o.topK = setting == 1 || setting == 5 ? 50 : 0;
        o.topP = setting >= 2 && setting != 3 ? 0.9 : 1.0;
        o.minP = setting == 3 || setting == 5 ? 0.05 : 0.0;
        o.seed = uint64_t(setting);
        std::vector<int32_t> expected = keptByFullSort(logits, o);
        std::vector<float> warped = logits;
        Sampler s(o);
        int32_t id = s.next(warped, {});
        std::vector<int32_t> kept;
        for (size_t i = 0; i < vocab; ++i)
          if (!std::isinf(warped[i])) {
            kept.push_back(int32_t(i));
            EXPECT_EQ(warped[i], float(double(logits[i]) / o.temperature));
          }
        EXPECT_EQ(kept, expected)
            << "vocab " << vocab << " spread " << spread << " setting "
            << setting;
        EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), id));
      }
}

TEST(Sampler, MinPKeepsIdsNearTheBest) {
  // Weights at T = 1: 1, e^-1 = 0.37, e^-3 = 0.05, e^-5 = 0.0067.
  SamplingOptions o = sampling(1.0);
  o.minP = 0.1;
  std::vector<float> logits = {5.0f, 4.0f, 2.0f, 0.0f};
  Sampler s(o);
  s.next(logits, {});
  EXPECT_FALSE(std::isinf(logits[0]) || std::isinf(logits[1]));
  EXPECT_TRUE(std::isinf(logits[2]) && std::isinf(logits[3]));
}

TEST(Sampler, NaNLogitsRankLast) {
  std::vector<float> logits = {NAN, 1.0f, NAN, 0.5f};
  Sampler s(sampling(1.0, 2, 1.0, 1.0, 3));
  int32_t id = s.next(logits, {});
  EXPECT_TRUE(id == 1 || id == 3) << id;
}

} // namespace

namespace {

/// Relative frequency of each id over `draws` tokens of `pick`.
std::vector<double> frequencies(size_t vocab, int draws,
                                const std::function<int32_t()> &pick) {
  std::vector<double> f(vocab, 0.0);
  for (int i = 0; i < draws; ++i)
    f[size_t(pick())] += 1.0 / draws;
  return f;
}

} // namespace

// Speculative decoding keeps the target's distribution: a draft accepted by
// verify() or replaced by its draw gives tokens distributed as next()'s,
// whichever id was drafted (a likely one, an unlikely one, one top-k drops).
TEST(Sampler, VerifyKeepsTheDistributionOfNext) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, 0.0f, 1.5f};
  SamplingOptions o = sampling(0.8, /*topK=*/4);
  const int draws = 200000;
  Sampler plain(o);
  const std::vector<double> want =
      frequencies(logits.size(), draws, [&] {
        std::vector<float> l = logits;
        return plain.next(l, {});
      });
  for (int32_t draft : {0, 2, 3}) {
    o.seed = uint64_t(draft) + 11;
    Sampler speculative(o);
    const std::vector<double> got =
        frequencies(logits.size(), draws, [&] {
          std::vector<float> l = logits;
          return speculative.verify(l, {}, draft);
        });
    for (size_t id = 0; id < logits.size(); ++id)
      EXPECT_NEAR(got[id], want[id], 0.006) << "draft " << draft << " id "
                                            << id;
  }
  // Dropped by top-k: never accepted.
  EXPECT_EQ(want[3], 0.0);
}

TEST(Sampler, VerifyGreedyAcceptsOnlyTheArgmax) {
  Sampler s(sampling(0));
  std::vector<float> l = {0.1f, 3.0f, 2.0f};
  EXPECT_EQ(s.verify(l, {}, 1), 1);
  l = {0.1f, 3.0f, 2.0f};
  EXPECT_EQ(s.verify(l, {}, 2), 1);
}
