//===- QuantizeSearchTests.cpp - every form of the INT4 search agrees -----===//
//
// Bundles must not depend on the CPU that compiled them: the AVX2 form of
// quantizeRowInt4Search gives the portable form's scale and codes bit for
// bit, on ordinary rows and on the rows that exercise rounding ties, odd
// lengths, zeros, subnormals, infinities and NaNs.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace pccx::hw;

namespace {

void expectSameForms(const std::vector<float> &row, const char *what) {
  if (!quantizeIsaAvailable(QuantizeIsa::Avx2))
    GTEST_SKIP() << "this CPU has no AVX2";
  size_t n = row.size();
  std::vector<int8_t> qp(n, 99), qa(n, 99);
  float sp =
      quantizeRowInt4Search(row.data(), n, qp.data(), QuantizeIsa::Portable);
  float sa = quantizeRowInt4Search(row.data(), n, qa.data(), QuantizeIsa::Avx2);
  EXPECT_EQ(0, std::memcmp(&sp, &sa, sizeof(float)))
      << what << " n=" << n << ": scale " << sp << " vs " << sa;
  EXPECT_EQ(qp, qa) << what << " n=" << n;
  // Without a code buffer the scale is the same.
  float sn = quantizeRowInt4Search(row.data(), n, nullptr, QuantizeIsa::Avx2);
  EXPECT_EQ(0, std::memcmp(&sp, &sn, sizeof(float))) << what << " n=" << n;
}

TEST(QuantizeSearch, Avx2MatchesPortableOnRandomRows) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::student_t_distribution<float> heavy(2.0f);
  for (size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 100, 257, 2048, 2051})
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> row(n);
      for (float &v : row)
        v = trial % 2 ? normal(rng) : heavy(rng) * 0.01f;
      expectSameForms(row, trial % 2 ? "normal" : "heavy-tailed");
    }
}

TEST(QuantizeSearch, Avx2MatchesPortableOnTiesAndSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  std::mt19937 rng(11);
  for (size_t n : {3, 8, 13, 40}) {
    // Values on a grid of quarters and halves of max/7, where candidate
    // codes land exactly on .5 and std::round's ties decide.
    std::vector<float> grid(n);
    for (size_t i = 0; i < n; ++i)
      grid[i] = float(int(rng() % 57) - 28) * 0.25f;
    grid[0] = 7.0f;
    expectSameForms(grid, "grid");
    for (float &v : grid)
      v = -v;
    expectSameForms(grid, "negated grid");
    expectSameForms(std::vector<float>(n, 0.0f), "zeros");
    expectSameForms(std::vector<float>(n, -0.0f), "negative zeros");
    std::vector<float> special(n);
    for (float tweak : {inf, -inf, nan, tiny, 1e30f, -3e38f, 1e-40f}) {
      for (size_t i = 0; i < n; ++i)
        special[i] = float(int(rng() % 15) - 7) * 0.1f;
      special[rng() % n] = tweak;
      expectSameForms(special, "special value");
    }
    std::vector<float> subnormal(n);
    for (size_t i = 0; i < n; ++i)
      subnormal[i] = tiny * float(int(rng() % 21) - 10);
    expectSameForms(subnormal, "subnormals");
  }
}

} // namespace
