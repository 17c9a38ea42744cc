//===- GptqTests.cpp - error-compensating INT4 rounding -------------------===//
//
// The properties GPTQ rounding is used for: on correlated inputs it lowers
// a projection's output error against nearest rounding with the same
// per-row format, it never does worse on its objective, and without
// correlation it is nearest rounding.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/Gptq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace pccx::hw;

namespace {

/// Deterministic standard normals (Box-Muller over mt19937's raw output).
struct Normals {
  std::mt19937 engine;
  explicit Normals(unsigned seed) : engine(seed) {}
  double operator()() {
    double u1 = (double(engine()) + 1.0) / 4294967297.0;
    double u2 = double(engine()) / 4294967296.0;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

TEST(Gptq, GramAccumulatesOuterProducts) {
  InputGram gram;
  gram.columns = 2;
  const float x[] = {1, 2, 3, -1};
  accumulateGram(x, 2, &gram);
  EXPECT_EQ(gram.samples, 2);
  // [1 2]^T [1 2] + [3 -1]^T [3 -1]
  EXPECT_EQ(gram.values, (std::vector<double>{10, -1, -1, 5}));
}

TEST(Gptq, FactorIsTheCholeskyFactorOfTheDampedInverse) {
  const double h[] = {4, 1, 0, 1, 9, 2, 0, 2, 1};
  GptqFactor f;
  std::string error;
  ASSERT_TRUE(makeGptqFactor(h, 3, &f, &error)) << error;
  // Largest diagonal first.
  EXPECT_EQ(f.order, (std::vector<int32_t>{1, 0, 2}));
  const double damp = kGptqDamping * (4 + 9 + 1) / 3;
  EXPECT_DOUBLE_EQ(f.hessian[0], 4 + damp);
  EXPECT_DOUBLE_EQ(f.hessian[1], 1);
  // (U^T U) times the permuted damped H is the identity.
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double v = 0;
      for (int k = 0; k < 3; ++k) {
        double inv = 0;
        for (int m = 0; m < 3; ++m)
          inv += f.inverseFactor[size_t(m * 3 + i)] *
                 f.inverseFactor[size_t(m * 3 + k)];
        v += inv *
             f.hessian[size_t(f.order[size_t(k)] * 3 + f.order[size_t(j)])];
      }
      EXPECT_NEAR(v, i == j ? 1.0 : 0.0, 1e-12) << i << "," << j;
    }
  // U is upper triangular.
  EXPECT_EQ(f.inverseFactor[3], 0.0);
}

TEST(Gptq, DeadInputsDoNotBreakTheFactor) {
  const double h[] = {2, 0, 0, 0};
  GptqFactor f;
  std::string error;
  ASSERT_TRUE(makeGptqFactor(h, 2, &f, &error)) << error;
  const float row[] = {0.5f, -0.3f};
  int8_t q[2];
  EXPECT_GT(quantizeRowInt4Gptq(row, 2, ScaleRule::AbsMax, f, q), 0.0f);
}

TEST(Gptq, LowersOutputErrorOnCorrelatedInputs) {
  const int rows = 24, cols = 48, samples = 400;
  Normals normal(7);
  // Inputs x = A z: strongly correlated columns of different sizes.
  std::vector<double> mix(size_t(cols * cols));
  for (double &v : mix)
    v = normal();
  std::vector<float> x(size_t(samples * cols));
  for (int t = 0; t < samples; ++t) {
    std::vector<double> z(static_cast<size_t>(cols));
    for (double &v : z)
      v = normal();
    for (int i = 0; i < cols; ++i) {
      double v = 0;
      for (int k = 0; k < 4; ++k) // rank-4 structure plus noise
        v += mix[size_t(i * cols + k)] * z[size_t(k)];
      x[size_t(t * cols + i)] = float(v + 0.1 * z[size_t(i)]);
    }
  }
  InputGram gram;
  gram.columns = cols;
  accumulateGram(x.data(), samples, &gram);
  GptqFactor f;
  std::string error;
  ASSERT_TRUE(makeGptqFactor(gram.values.data(), cols, &f, &error)) << error;

  for (ScaleRule rule : {ScaleRule::AbsMax, ScaleRule::Search}) {
    double nearestError = 0, gptqError = 0;
    for (int r = 0; r < rows; ++r) {
      std::vector<float> w(static_cast<size_t>(cols));
      for (float &v : w)
        v = float(0.02 * normal());
      std::vector<int8_t> qn(static_cast<size_t>(cols)),
          qg(static_cast<size_t>(cols));
      const float sn = quantizeRow(QuantScheme{WeightFormat::Int4, rule},
                                   w.data(), size_t(cols), qn.data());
      const float sg =
          quantizeRowInt4Gptq(w.data(), size_t(cols), rule, f, qg.data());
      for (int8_t v : qg)
        ASSERT_TRUE(v >= -8 && v <= 7);
      // Measured directly on the inputs: sum_t (w.x_t - s q.x_t)^2.
      auto outputError = [&](float s, const std::vector<int8_t> &q) {
        double total = 0;
        for (int t = 0; t < samples; ++t) {
          double d = 0;
          for (int i = 0; i < cols; ++i)
            d += (double(w[size_t(i)]) - double(s) * q[size_t(i)]) *
                 x[size_t(t * cols + i)];
          total += d * d;
        }
        return total;
      };
      const double en = outputError(sn, qn), eg = outputError(sg, qg);
      // Never worse on its own (damped) objective.
      EXPECT_LE(gptqOutputError(w.data(), size_t(cols), sg, qg.data(), f),
                gptqOutputError(w.data(), size_t(cols), sn, qn.data(), f));
      nearestError += en;
      gptqError += eg;
    }
    // Well below nearest rounding on the inputs it was fitted to.
    EXPECT_LT(gptqError, 0.5 * nearestError)
        << scaleRuleName(rule) << ": gptq " << gptqError << " nearest "
        << nearestError;
  }
}

TEST(Gptq, UncorrelatedInputsGiveNearestCodes) {
  const int cols = 16;
  std::vector<double> h(size_t(cols * cols), 0.0);
  for (int i = 0; i < cols; ++i)
    h[size_t(i * cols + i)] = 1.0 + i; // independent inputs, unequal sizes
  GptqFactor f;
  std::string error;
  ASSERT_TRUE(makeGptqFactor(h.data(), cols, &f, &error)) << error;
  Normals normal(3);
  std::vector<float> w(static_cast<size_t>(cols));
  for (float &v : w)
    v = float(normal());
  std::vector<int8_t> qn(static_cast<size_t>(cols)),
      qg(static_cast<size_t>(cols));
  quantizeRowInt4(w.data(), size_t(cols), qn.data());
  quantizeRowInt4Gptq(w.data(), size_t(cols), ScaleRule::AbsMax, f, qg.data());
  EXPECT_EQ(qg, qn);
}

TEST(Gptq, SchemeNames) {
  QuantScheme s;
  ASSERT_TRUE(parseScheme("int4_per_row_search_gptq", &s));
  EXPECT_EQ(s.format, WeightFormat::Int4);
  EXPECT_EQ(s.scales, ScaleRule::Search);
  EXPECT_EQ(s.rounding, Rounding::Gptq);
  EXPECT_EQ(schemeName(s), "int4_per_row_search_gptq");
  ASSERT_TRUE(parseScheme("int4_per_row_gptq", &s));
  EXPECT_EQ(s.scales, ScaleRule::AbsMax);
  EXPECT_EQ(schemeName(s), "int4_per_row_gptq");
  ASSERT_TRUE(parseScheme("int4_per_row_search", &s));
  EXPECT_EQ(s.rounding, Rounding::Nearest);
  WeightFormat format;
  ASSERT_TRUE(parseScheme("int4_per_row_gptq", &format));
  EXPECT_EQ(format, WeightFormat::Int4);
  Rounding r;
  ASSERT_TRUE(parseRounding("gptq", &r));
  EXPECT_EQ(r, Rounding::Gptq);
  EXPECT_FALSE(parseRounding("awq", &r));
  EXPECT_STREQ(roundingName(Rounding::Nearest), "nearest");
}

} // namespace
