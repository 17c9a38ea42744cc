//===- ElementaryTests.cpp - the runtime's exp, log, tanh, sin, cos, pow --===//
//
// Accuracy against long double (64 or 113 significand bits, so its own
// error is far below the double ulps measured), the edge cases, and
// checksums of the fp32 results over every BF16 input: those pin the bits,
// so a platform (or compiler) on which any result differs fails here.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/Elementary.h"
#include "hw/numerics/HalfFloat.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

using namespace pccx;

namespace {

uint64_t bitsOf(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// |got - want| in ulps of the double nearest `want` (subnormal ulps below
/// the normal range).
double ulpError(double got, long double want) {
  const double nearest = double(want);
  if (std::isinf(nearest) || std::isinf(got))
    return got == nearest ? 0 : HUGE_VAL;
  if (got == nearest)
    return 0;
  int exponent;
  std::frexp(nearest, &exponent);
  const long double ulp = std::ldexp(1.0L, std::max(exponent - 53, -1074));
  return double(std::fabs((static_cast<long double>(got) - want) / ulp));
}

struct Sweep {
  double worst = 0, at = 0;
};

/// The largest error over `n` points: evenly spread over [lo, hi] (both
/// included) and as many again drawn at random.
Sweep sweep(const std::function<double(double)> &f,
            const std::function<long double(long double)> &want, double lo,
            double hi, int n) {
  Sweep s;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(lo, hi);
  for (int i = 0; i < 2 * n; ++i) {
    const double x = i < n ? lo + (hi - lo) * double(i) / double(n - 1)
                           : uniform(rng);
    const double e = ulpError(f(x), want(static_cast<long double>(x)));
    if (e > s.worst) {
      s.worst = e;
      s.at = x;
    }
  }
  return s;
}

/// Every finite double in [2^lo, 2^hi) is as likely: for log and pow.
Sweep sweepLog(const std::function<double(double)> &f,
               const std::function<long double(long double)> &want, int lo,
               int hi, int n) {
  Sweep s;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(lo, hi - 1);
  for (int i = 0; i < n; ++i) {
    const double x = std::ldexp(mantissa(rng), exponent(rng));
    const double e = ulpError(f(x), want(static_cast<long double>(x)));
    if (e > s.worst) {
      s.worst = e;
      s.at = x;
    }
  }
  return s;
}

// Bounds a little above what the tests measure (docs/isa-semantics.md §2
// lists the measured values): every function stays below one ulp.
constexpr int kPoints = 200000;

#define EXPECT_ULPS(sweepExpr, bound)                                          \
  do {                                                                         \
    const Sweep s_ = (sweepExpr);                                              \
    EXPECT_LT(s_.worst, bound) << "at x = " << s_.at;                         \
  } while (0)

TEST(Elementary, ExpAccuracy) {
  auto want = [](long double x) { return std::exp(x); };
  EXPECT_ULPS(sweep(hw::exp, want, -1, 1, kPoints), 0.65);
  EXPECT_ULPS(sweep(hw::exp, want, -708, 709.78, kPoints), 0.65);
  // Subnormal results: an error below one subnormal ulp.
  EXPECT_ULPS(sweep(hw::exp, want, -745.13, -708.4, kPoints), 0.8);
  EXPECT_ULPS(sweep(hw::exp, want, -1e-6, 1e-6, kPoints), 0.65);
}

TEST(Elementary, LogAccuracy) {
  auto want = [](long double x) { return std::log(x); };
  EXPECT_ULPS(sweep(hw::log, want, 0.5, 2, kPoints), 0.52);
  EXPECT_ULPS(sweepLog(hw::log, want, -1074, 1024, kPoints), 0.52);
  EXPECT_ULPS(sweep(hw::log, want, 1 - 1e-9, 1 + 1e-9, kPoints), 0.52);
}

TEST(Elementary, TanhAccuracy) {
  auto want = [](long double x) { return std::tanh(x); };
  EXPECT_ULPS(sweep(hw::tanh, want, -0.6, 0.6, kPoints), 0.85);
  EXPECT_ULPS(sweep(hw::tanh, want, -30, 30, kPoints), 0.85);
  EXPECT_ULPS(sweepLog(hw::tanh, want, -40, 0, kPoints), 0.85);
}

TEST(Elementary, SinCosAccuracy) {
  auto wantSin = [](long double x) { return std::sin(x); };
  auto wantCos = [](long double x) { return std::cos(x); };
  for (double range : {1.0, 10.0, 1e5, 823000.0}) {
    SCOPED_TRACE(range);
    EXPECT_ULPS(sweep(hw::sin, wantSin, -range, range, kPoints), 0.85);
    EXPECT_ULPS(sweep(hw::cos, wantCos, -range, range, kPoints), 0.85);
  }
  // Near multiples of pi/2 the reduced argument cancels most of x: the
  // doubles nearest k pi/2.
  for (int k = 1; k < 200000; k += 997) {
    const long double m = static_cast<long double>(k) * 1.5707963267948966192313216916397514L;
    const double x = double(m);
    EXPECT_LT(ulpError(hw::sin(x), std::sin(static_cast<long double>(x))), 0.85)
        << k;
    EXPECT_LT(ulpError(hw::cos(x), std::cos(static_cast<long double>(x))), 0.85)
        << k;
  }
}

TEST(Elementary, SinCosOfLargeArgumentsStayBounded) {
  // Past 823 549 the reduction is modulo the double nearest 2 pi:
  // deterministic, in [-1, 1], and close while x stays moderate.
  for (double x : {1e6, 3.5e7, 1e12, 1e300, -7e200}) {
    EXPECT_LE(std::fabs(hw::sin(x)), 1.0);
    EXPECT_LE(std::fabs(hw::cos(x)), 1.0);
  }
  EXPECT_NEAR(hw::sin(1e6), std::sin(1e6), 1e-9);
  EXPECT_NEAR(hw::cos(1e6), std::cos(1e6), 1e-9);
}

TEST(Elementary, PowAccuracy) {
  // The runtime's use: RoPE frequencies theta^(2j/d).
  for (double theta : {10000.0, 1000000.0}) {
    auto f = [theta](double y) { return hw::pow(theta, y); };
    auto want = [theta](long double y) {
      return std::pow(static_cast<long double>(theta), y);
    };
    EXPECT_ULPS(sweep(f, want, -1, 1, kPoints), 0.65);
  }
  // A base near sqrt(2), the worst case of the logarithm's reduction,
  // raised as far as the result stays finite.
  const double base = 1.4142;
  auto f = [base](double y) { return hw::pow(base, y); };
  auto want = [base](long double y) {
    return std::pow(static_cast<long double>(base), y);
  };
  EXPECT_ULPS(sweep(f, want, -2040, 2040, kPoints), 0.65);
  auto g = [](double x) { return hw::pow(x, 2.5); };
  auto wantG = [](long double x) { return std::pow(x, 2.5L); };
  EXPECT_ULPS(sweepLog(g, wantG, -400, 400, kPoints), 0.65);
}

TEST(Elementary, CanonicalNaN) {
  const uint64_t canonical = 0x7ff8000000000000ull;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double payload;
  const uint64_t negativePayload = 0xfff4000000000123ull; // signalling
  std::memcpy(&payload, &negativePayload, sizeof payload);
  const double inf = HUGE_VAL;
  for (double x : {nan, -nan, payload}) {
    EXPECT_EQ(bitsOf(hw::exp(x)), canonical);
    EXPECT_EQ(bitsOf(hw::log(x)), canonical);
    EXPECT_EQ(bitsOf(hw::tanh(x)), canonical);
    EXPECT_EQ(bitsOf(hw::sin(x)), canonical);
    EXPECT_EQ(bitsOf(hw::cos(x)), canonical);
    EXPECT_EQ(bitsOf(hw::pow(x, 0.5)), canonical);
    EXPECT_EQ(bitsOf(hw::pow(2.0, x)), canonical);
    EXPECT_EQ(hw::floatBits(hw::tanhf(float(x))), 0x7fc00000u);
  }
  // NaNs the functions make themselves.
  EXPECT_EQ(bitsOf(hw::log(-1.0)), canonical);
  EXPECT_EQ(bitsOf(hw::log(-inf)), canonical);
  EXPECT_EQ(bitsOf(hw::sin(inf)), canonical);
  EXPECT_EQ(bitsOf(hw::cos(-inf)), canonical);
  EXPECT_EQ(bitsOf(hw::pow(-2.0, 0.5)), canonical);
  EXPECT_EQ(bitsOf(hw::pow(-2.0, 2.0)), canonical);
}

TEST(Elementary, EdgeCases) {
  const double inf = HUGE_VAL, tiny = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(hw::exp(0.0), 1.0);
  EXPECT_EQ(hw::exp(-0.0), 1.0);
  EXPECT_EQ(hw::exp(inf), inf);
  EXPECT_EQ(bitsOf(hw::exp(-inf)), 0u);
  EXPECT_LT(ulpError(hw::exp(709.78), std::exp(static_cast<long double>(709.78))),
            0.65);
  EXPECT_EQ(hw::exp(709.79), inf);
  EXPECT_EQ(hw::exp(-745.0), tiny); // 0.57 of the smallest subnormal
  EXPECT_EQ(hw::exp(-745.2), 0.0);
  EXPECT_EQ(hw::exp(-1000.0), 0.0);
  EXPECT_EQ(hw::exp(1.0), 2.718281828459045);

  EXPECT_EQ(hw::log(1.0), 0.0);
  EXPECT_EQ(hw::log(0.0), -inf);
  EXPECT_EQ(hw::log(-0.0), -inf);
  EXPECT_EQ(hw::log(inf), inf);
  EXPECT_EQ(hw::log(tiny), -744.4400719213812);
  EXPECT_EQ(hw::log(DBL_MAX), 709.782712893384);
  EXPECT_EQ(hw::log(2.0), 0.6931471805599453);

  EXPECT_EQ(bitsOf(hw::tanh(-0.0)), bitsOf(-0.0));
  EXPECT_EQ(hw::tanh(1e-300), 1e-300);
  EXPECT_EQ(hw::tanh(tiny), tiny);
  EXPECT_EQ(hw::tanh(inf), 1.0);
  EXPECT_EQ(hw::tanh(-inf), -1.0);
  EXPECT_EQ(hw::tanh(19.5), 1.0);
  EXPECT_EQ(hw::tanh(-300.0), -1.0);
  for (double x = 0.001; x < 25; x *= 1.37)
    EXPECT_EQ(hw::tanh(-x), -hw::tanh(x)) << x;

  EXPECT_EQ(bitsOf(hw::sin(-0.0)), bitsOf(-0.0));
  EXPECT_EQ(hw::sin(tiny), tiny);
  EXPECT_EQ(hw::cos(-0.0), 1.0);
  EXPECT_EQ(hw::cos(tiny), 1.0);
  for (double x = 0.001; x < 1e5; x *= 1.37) {
    EXPECT_EQ(hw::sin(-x), -hw::sin(x)) << x;
    EXPECT_EQ(hw::cos(-x), hw::cos(x)) << x;
  }

  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(hw::pow(nan, 0.0), 1.0);
  EXPECT_EQ(hw::pow(1.0, nan), 1.0);
  EXPECT_EQ(hw::pow(1.0, inf), 1.0);
  EXPECT_EQ(hw::pow(0.0, 0.0), 1.0);
  EXPECT_EQ(hw::pow(inf, 0.0), 1.0);
  EXPECT_EQ(hw::pow(3.0, 1.0), 3.0);
  EXPECT_EQ(hw::pow(0.0, 2.5), 0.0);
  EXPECT_EQ(hw::pow(-0.0, 2.5), 0.0);
  EXPECT_EQ(hw::pow(0.0, -2.5), inf);
  EXPECT_EQ(hw::pow(inf, 0.5), inf);
  EXPECT_EQ(hw::pow(inf, -0.5), 0.0);
  EXPECT_EQ(hw::pow(2.0, inf), inf);
  EXPECT_EQ(hw::pow(2.0, -inf), 0.0);
  EXPECT_EQ(hw::pow(0.5, inf), 0.0);
  EXPECT_EQ(hw::pow(0.5, -inf), inf);
  EXPECT_EQ(hw::pow(2.0, 1024.0), inf);
  EXPECT_EQ(hw::pow(2.0, 1023.0), 0x1p1023);
  EXPECT_EQ(hw::pow(2.0, -1074.0), tiny);
  EXPECT_EQ(hw::pow(2.0, -1076.0), 0.0);
  EXPECT_EQ(hw::pow(10.0, 400.0), inf);
  EXPECT_EQ(hw::pow(10.0, -400.0), 0.0);
  EXPECT_EQ(hw::pow(1e300, 1e300), inf);
  EXPECT_EQ(hw::pow(4.0, 0.5), 2.0);
  EXPECT_EQ(hw::pow(10000.0, 0.25), 10.0);
}

/// FNV-1a over the fp32 bits of f(x) for every BF16 pattern x.
uint64_t bf16Checksum(const std::function<float(float)> &f) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint32_t r = hw::floatBits(f(hw::bf16ToFloat(uint16_t(bits))));
    for (int i = 0; i < 4; ++i) {
      h ^= (r >> (8 * i)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

// The fp32 results over every BF16 input, as the runtime computes them
// (tanhf: the AltUp router, the soft-cap table; the double functions
// rounded to fp32: the simulator's SFU). Computed once; any platform, libm
// or compiler that changes one bit of one result fails.
TEST(Elementary, EveryBf16InputGivesThePinnedBits) {
  EXPECT_EQ(bf16Checksum(hw::tanhf), 0xb12e87bc941ffbadull);
  EXPECT_EQ(bf16Checksum([](float x) { return hw::tanhf(x / 30.0f) * 30.0f; }),
            0xf3fc25aa96319705ull);
  EXPECT_EQ(bf16Checksum(hw::expf), 0x9748938080659125ull);
  EXPECT_EQ(bf16Checksum(hw::sinf), 0xc2d69413443db4b1ull);
  EXPECT_EQ(bf16Checksum(hw::cosf), 0xeee5c8c869590a29ull);
  EXPECT_EQ(bf16Checksum([](float x) { return float(hw::log(double(x))); }),
            0xf3e39677dcfb6ac7ull);
  EXPECT_EQ(bf16Checksum([](float x) {
              return float(hw::pow(10000.0, double(x)));
            }),
            0xbefe8333774b386cull);
}

// The double results over a dense grid, every function: compiled with FMA
// contraction (GCC's default on aarch64) the functions give other bits.
// The grid points are exact (multiples of 2^-11), so the test's own
// arithmetic is the same contracted or not.
TEST(Elementary, DenseDoubleResultsGiveThePinnedBits) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 2000000; ++i) {
    const double x = (double(i) - 1600000) * 0x1p-11; // [-781.25, 195.3]
    for (double r : {hw::exp(x), hw::log(std::fabs(x)), hw::tanh(x),
                     hw::sin(x * 100), hw::cos(x * 100),
                     hw::pow(std::fabs(x), 0.37)}) {
      h ^= bitsOf(r);
      h *= 0x100000001b3ull;
    }
  }
  EXPECT_EQ(h, 0xd560a4a2eda753faull);
}

TEST(Elementary, FloatFormsRoundTheDoubleOnce) {
  for (float x : {0.0f, -0.0f, 0.5f, -3.25f, 1e-20f, 88.7f, 100.0f}) {
    EXPECT_EQ(hw::floatBits(hw::expf(x)), hw::floatBits(float(hw::exp(x))));
    EXPECT_EQ(hw::floatBits(hw::tanhf(x)), hw::floatBits(float(hw::tanh(x))));
    EXPECT_EQ(hw::floatBits(hw::sinf(x)), hw::floatBits(float(hw::sin(x))));
    EXPECT_EQ(hw::floatBits(hw::cosf(x)), hw::floatBits(float(hw::cos(x))));
  }
  EXPECT_EQ(hw::expf(89.0f), HUGE_VALF); // past FLT_MAX after rounding
}

} // namespace
