//===- Elementary.cpp - portable elementary functions ---------------------===//
//
// Every function reduces its argument exactly (Cody-Waite with constants
// split so that the products with the reduction's integer are exact) and
// evaluates a truncated Taylor series whose first omitted term is below
// 0.05 ulp over the reduced interval. Where the last rounding would
// otherwise cost more than half an ulp, the leading terms are carried as
// double-double (an unevaluated sum hi + lo) and rounded once at the end.
// Products that must be exact use Veltkamp's split, not an FMA, so the
// file needs only plain double arithmetic (CMake keeps contraction off).
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/Elementary.h"

#include <cmath>
#include <cstdint>
#include <cstring>

// twoSum, twoProduct and the double-double steps are exact only if every
// a * b + c rounds twice; contracted into an FMA (GCC's default on aarch64)
// log and pow lose accuracy and every function other bits. CMake compiles
// PccxHw with -ffp-contract=off; this keeps the file right when a build
// compiles it otherwise (except clang's -ffp-contract=fast, which ignores
// the pragma).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace pccx::hw {

namespace {

uint64_t bitsOf(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
double fromBits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

const double kNaN = fromBits(0x7ff8000000000000ull);
const double kInf = fromBits(0x7ff0000000000000ull);

bool isNaN(double v) { return (bitsOf(v) << 1) > (0x7ffull << 53); }
double magnitude(double v) { return fromBits(bitsOf(v) & ~(1ull << 63)); }

/// v rounded to the nearest integer, ties to even, for |v| < 2^51: adding
/// 1.5 * 2^52 leaves no fraction bits, so the addition itself rounds.
double roundToInt(double v) {
  constexpr double kShifter = 0x1.8p52;
  return (v + kShifter) - kShifter;
}

/// 2^k for a normal power, built from its bits.
double powerOfTwo(int k) { return fromBits(uint64_t(k + 1023) << 52); }

/// v * 2^k with one rounding, for |k| <= 1100 and v in [0.5, 2]: past the
/// normal exponents the product is formed in two steps, the first exact.
double scaleByPowerOfTwo(double v, int k) {
  if (k > 1023)
    return (v * powerOfTwo(k - 1023)) * 0x1p1023;
  if (k < -1022)
    return (v * powerOfTwo(k + 64)) * 0x1p-64;
  return v * powerOfTwo(k);
}

/// a + b = s + e exactly (Knuth's TwoSum, any magnitudes).
void twoSum(double a, double b, double &s, double &e) {
  s = a + b;
  double bv = s - a;
  e = (a - (s - bv)) + (b - bv);
}

/// a + b = s + e exactly when |a| >= |b| (or a is 0).
void fastTwoSum(double a, double b, double &s, double &e) {
  s = a + b;
  e = b - (s - a);
}

/// a = hi + lo with both halves of at most 26 significant bits, so their
/// products are exact (Veltkamp). |a| < 2^995.
void split(double a, double &hi, double &lo) {
  double t = 0x1.0000002p27 * a; // 2^27 + 1
  hi = t - (t - a);
  lo = a - hi;
}

/// a * b = p + e exactly (Dekker), without an FMA.
void twoProduct(double a, double b, double &p, double &e) {
  p = a * b;
  double ah, al, bh, bl;
  split(a, ah, al);
  split(b, bh, bl);
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// (ah + al)(bh + bl) as h + l; the al * bl term is below the result's
// precision and left out.
void mulDoubleDouble(double ah, double al, double bh, double bl, double &h,
                     double &l) {
  twoProduct(ah, bh, h, l);
  l += al * bh + ah * bl;
}

// ln 2 = kLn2Hi + kLn2Lo to 2^-102: kLn2Hi has 42 significant bits, so
// k * kLn2Hi is exact for every |k| < 2^11 the reductions use.
constexpr double kLn2Hi = 0x1.62e42fefa38p-1;
constexpr double kLn2Lo = 0x1.ef35793c7673p-45;
constexpr double kInvLn2 = 0x1.71547652b82fep+0;

// exp(x) is finite up to ln(DBL_MAX) and rounds to 0 below ln(2^-1075).
constexpr double kExpMax = 0x1.62e42fefa39efp+9;   // 709.78
constexpr double kExpMin = -0x1.74910d52d3052p+9;  // -745.13

/// e^(x + tail) = 2^k (mh + ml) for x in [kExpMin, kExpMax] and
/// |tail| <= ulp(x); mh is e^(x + tail) / 2^k rounded once, in
/// [0.70, 1.42]. With x = k ln2 + r, |r| <= ln2 / 2, e^r is 1 + r + q where
/// q is the series from r^2 / 2 on; 1 + r is kept as a double-double so
/// that only the sum with q and the reduction's rounding error rounds.
void expParts(double x, double tail, double &mh, double &ml, int &k) {
  // 1 / n! for n = 2 .. 14; the first term left out, r^15 / 15!, is below
  // 2^-60 of the result.
  constexpr double kC2 = 1.0 / 2, kC3 = 1.0 / 6, kC4 = 1.0 / 24,
                   kC5 = 1.0 / 120, kC6 = 1.0 / 720, kC7 = 1.0 / 5040,
                   kC8 = 1.0 / 40320, kC9 = 1.0 / 362880,
                   kC10 = 1.0 / 3628800, kC11 = 1.0 / 39916800,
                   kC12 = 1.0 / 479001600, kC13 = 1.0 / 6227020800,
                   kC14 = 1.0 / 87178291200;
  const double kd = roundToInt(x * kInvLn2);
  // x and kd * kLn2Hi are within a factor of two (or kd is 0): exact.
  const double rh = x - kd * kLn2Hi;
  const double rl = tail - kd * kLn2Lo;
  double r, c;
  fastTwoSum(rh, rl, r, c);
  const double q =
      r * r *
      (kC2 +
       r * (kC3 +
            r * (kC4 +
                 r * (kC5 +
                      r * (kC6 +
                           r * (kC7 +
                                r * (kC8 +
                                     r * (kC9 +
                                          r * (kC10 +
                                               r * (kC11 +
                                                    r * (kC12 +
                                                         r * (kC13 +
                                                              r * kC14))))))))))));
  double s, e;
  fastTwoSum(1.0, r, s, e);
  // e^(r + c) = e^r (1 + c): c * (1 + r) is its first-order part.
  fastTwoSum(s, e + (q + (c + c * r)), mh, ml);
  k = int(kd);
}

double expCore(double x, double tail) {
  double mh, ml;
  int k;
  expParts(x, tail, mh, ml, k);
  return scaleByPowerOfTwo(mh, k);
}

/// ln x = hi + lo to about 2^-100 relatively, for finite x > 0. With
/// x = 2^e m, m in [sqrt(1/2), sqrt(2)], and s = (m - 1) / (m + 1),
/// ln m = 2 atanh s = 2s + 2s^3/3 + 2s^5/5 + ...; |s| <= 0.172. pow needs
/// ln x to 2^-64 relatively (an error in y ln x of 709 * 2^-64 is a third
/// of an ulp of x^y), so s, s^3 and s^5 are carried in double-double and
/// only the terms from s^7 on, below 2^-18 of the sum, in double.
void logDoubleDouble(double x, double &hi, double &lo) {
  // 2 / (2n + 1) for n = 3 .. 14; the first term left out, 2 s^31 / 31, is
  // below 2^-80 of the sum.
  constexpr double kA7 = 2.0 / 7, kA9 = 2.0 / 9, kA11 = 2.0 / 11,
                   kA13 = 2.0 / 13, kA15 = 2.0 / 15, kA17 = 2.0 / 17,
                   kA19 = 2.0 / 19, kA21 = 2.0 / 21, kA23 = 2.0 / 23,
                   kA25 = 2.0 / 25, kA27 = 2.0 / 27, kA29 = 2.0 / 29;
  // 2/3 and 2/5 as double-doubles.
  constexpr double kA3Hi = 0x1.5555555555555p-1, kA3Lo = 0x1.5555555555555p-55;
  constexpr double kA5Hi = 0x1.999999999999ap-2, kA5Lo = -0x1.999999999999ap-56;
  constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;

  int exponent = 0;
  uint64_t b = bitsOf(x);
  if (b < (1ull << 52)) { // subnormal: make it normal, exactly
    x *= 0x1p54;
    b = bitsOf(x);
    exponent = -54;
  }
  exponent += int(b >> 52) - 1023;
  double m = fromBits((b & ((1ull << 52) - 1)) | (1023ull << 52));
  if (m > kSqrt2) {
    m *= 0.5;
    ++exponent;
  }
  const double f = m - 1; // exact: m is within a factor of two of 1

  // s = f / (2 + f) as sh + sl; 2 + f is d + dl exactly.
  double d, dl;
  fastTwoSum(2.0, f, d, dl);
  const double sh = f / d;
  double p, pe;
  twoProduct(sh, d, p, pe);
  const double sl = (((f - p) - pe) - sh * dl) / d;

  // s^2, s^3 and s^5 as double-doubles.
  double zh, zl;
  twoProduct(sh, sh, zh, zl);
  zl += 2 * sh * sl;
  double ch, cl;
  mulDoubleDouble(zh, zl, sh, sl, ch, cl);
  double fh, fl;
  mulDoubleDouble(ch, cl, zh, zl, fh, fl);
  // (2/3) s^3 and (2/5) s^5.
  double th, tl;
  mulDoubleDouble(ch, cl, kA3Hi, kA3Lo, th, tl);
  double gh, gl;
  mulDoubleDouble(fh, fl, kA5Hi, kA5Lo, gh, gl);

  const double z = zh;
  const double rest =
      fh * z *
      (kA7 +
       z * (kA9 +
            z * (kA11 +
                 z * (kA13 +
                      z * (kA15 +
                           z * (kA17 +
                                z * (kA19 +
                                     z * (kA21 +
                                          z * (kA23 +
                                               z * (kA25 +
                                                    z * (kA27 +
                                                         z * kA29)))))))))));

  // ln m = 2 sh + th + gh + (2 sl + tl + gl + rest); each term dominates
  // the next.
  double h, l, h2, l2;
  fastTwoSum(2 * sh, th, h, l);
  fastTwoSum(h, gh, h2, l2);
  h = h2;
  l += l2 + (2 * sl + tl + gl + rest);

  // + exponent * ln 2; exponent * kLn2Hi is exact.
  const double e = double(exponent);
  double H, L;
  twoSum(e * kLn2Hi, h, H, L);
  L += l + e * kLn2Lo;
  fastTwoSum(H, L, hi, lo);
}

// pi / 2 = kPio2Part1 + kPio2Part2 + kPio2Part3 + kPio2Part4 to 2^-150;
// the first three have 33 significant bits, so n * part is exact for every
// |n| <= 2^20.
constexpr double kPio2Part1 = 0x1.921fb544p+0;
constexpr double kPio2Part2 = 0x1.0b4611a6p-34;
constexpr double kPio2Part3 = 0x1.3198a2ep-69;
constexpr double kPio2Part4 = 0x1.b839a252049c1p-104;
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kPiOver4 = 0x1.921fb54442d18p-1;
constexpr double kTwoPi = 0x1.921fb54442d18p+2;
// Below this, round(x * 2/pi) <= 2^19 and the three-part reduction is
// exact up to kPio2Part4's rounding.
constexpr double kReduceLimit = 823549.0;

/// x = n pi/2 + (hi + lo), |hi + lo| <= pi/4 (a hair more when x * 2/pi
/// rounds across a half); returns n mod 4. The reduced argument carries
/// about 100 bits beyond the cancellation, enough for the closest double
/// to a multiple of pi/2 below kReduceLimit.
unsigned reduceQuadrant(double x, double &hi, double &lo) {
  if (magnitude(x) <= kPiOver4) {
    hi = x;
    lo = 0;
    return 0;
  }
  if (!(magnitude(x) < kReduceLimit))
    // Exact (fmod is), but the difference between kTwoPi and 2 pi,
    // ~2.4e-16, is multiplied by x / 2 pi: deterministic, less accurate.
    x = std::fmod(x, kTwoPi);
  const double nd = roundToInt(x * kTwoOverPi);
  // x and nd * kPio2Part1 are within a factor of two (or nd is 0): exact.
  double y = x - nd * kPio2Part1;
  double err = 0, s, e;
  twoSum(y, -(nd * kPio2Part2), s, e);
  y = s;
  err += e;
  twoSum(y, -(nd * kPio2Part3), s, e);
  y = s;
  err += e;
  err -= nd * kPio2Part4;
  fastTwoSum(y, err, hi, lo);
  return unsigned(int64_t(nd)) & 3u;
}

/// sin(hi + lo) for |hi + lo| <= pi/4 + a hair, lo tiny against hi.
double sinKernel(double hi, double lo) {
  // (-1)^n / (2n + 1)! for n = 1 .. 9; the first term left out, r^21 / 21!,
  // is below 2^-70 of the result.
  constexpr double kS3 = -1.0 / 6, kS5 = 1.0 / 120, kS7 = -1.0 / 5040,
                   kS9 = 1.0 / 362880, kS11 = -1.0 / 39916800,
                   kS13 = 1.0 / 6227020800, kS15 = -1.0 / 1307674368000,
                   kS17 = 1.0 / 355687428096000,
                   kS19 = -1.0 / 121645100408832000;
  const double z = hi * hi;
  const double poly =
      kS3 +
      z * (kS5 +
           z * (kS7 +
                z * (kS9 +
                     z * (kS11 +
                          z * (kS13 + z * (kS15 + z * (kS17 + z * kS19)))))));
  // sin(hi + lo) = sin hi + lo cos hi; lo * z / 2 is below 2^-54 of lo.
  return hi + (hi * z * poly + lo * (1 - 0.5 * z));
}

/// cos(hi + lo) for |hi + lo| <= pi/4 + a hair, lo tiny against hi. 1 - r^2/2
/// is formed exactly (r^2 split by Dekker) and rounded with the rest.
double cosKernel(double hi, double lo) {
  // (-1)^n / (2n)! for n = 2 .. 9; the first term left out, r^20 / 20!, is
  // below 2^-67.
  constexpr double kC4 = 1.0 / 24, kC6 = -1.0 / 720, kC8 = 1.0 / 40320,
                   kC10 = -1.0 / 3628800, kC12 = 1.0 / 479001600,
                   kC14 = -1.0 / 87178291200, kC16 = 1.0 / 20922789888000,
                   kC18 = -1.0 / 6402373705728000;
  double zh, zl;
  twoProduct(hi, hi, zh, zl);
  const double half = 0.5 * zh, halfLo = 0.5 * zl;
  const double w = 1 - half;
  // The rounding error of w, exactly: 1 - w and the difference are exact.
  const double corr = ((1 - w) - half) - halfLo;
  const double z = zh;
  const double poly =
      z * z *
      (kC4 +
       z * (kC6 +
            z * (kC8 +
                 z * (kC10 + z * (kC12 + z * (kC14 + z * (kC16 + z * kC18)))))));
  // cos(hi + lo) = cos hi - lo sin hi.
  return w + (corr + (poly - hi * lo));
}

} // namespace

double exp(double x) {
  if (isNaN(x))
    return kNaN;
  if (x > kExpMax)
    return kInf;
  if (x < kExpMin)
    return 0.0;
  return expCore(x, 0.0);
}

double log(double x) {
  if (isNaN(x) || x < 0)
    return kNaN;
  if (x == 0)
    return -kInf;
  if (x == kInf)
    return kInf;
  double hi, lo;
  logDoubleDouble(x, hi, lo);
  return hi;
}

double tanh(double x) {
  // tanh x = sum c_n x^n, c_n = 2^(n+1) (2^(n+1) - 1) B_(n+1) / (n+1)! for
  // odd n, n = 3 .. 39: below 0.55 the first term left out, c_41 x^40, is
  // below 2^-58 of the result.
  constexpr double kT3 = -0x1.5555555555555p-2, kT5 = 0x1.1111111111111p-3,
                   kT7 = -0x1.ba1ba1ba1ba1cp-5, kT9 = 0x1.664f4882c10fap-6,
                   kT11 = -0x1.226e355e6c23dp-7, kT13 = 0x1.d6d3d0e157de0p-9,
                   kT15 = -0x1.7da36452b75e3p-10, kT17 = 0x1.3558248036744p-11,
                   kT19 = -0x1.f57d7734d1664p-13, kT21 = 0x1.967e18afcafadp-14,
                   kT23 = -0x1.497d8eea25259p-15, kT25 = 0x1.0b132d39a6050p-16,
                   kT27 = -0x1.b0f72d3ee24e9p-18, kT29 = 0x1.5ef2da474e5b7p-19,
                   kT31 = -0x1.1c77df95c1c0dp-20, kT33 = 0x1.cd299de4ae6bbp-22,
                   kT35 = -0x1.75cde6563fed9p-23, kT37 = 0x1.2efe8db3aff1fp-24,
                   kT39 = -0x1.eb3229047434cp-26;
  if (isNaN(x))
    return kNaN;
  const double a = magnitude(x);
  if (a < 0x1p-27) // x^3 / 3 is below half an ulp of x; keeps the sign of 0
    return x;
  if (a < 0.55) {
    // The series converges for |x| < pi/2; at 0.55 every term is an eighth
    // of the one before. Past atanh(1/2) = 0.549 the result is >= 1/2 and
    // 1 - 2 / (e^2x + 1) loses nothing to cancellation.
    const double z = x * x;
    const double poly =
        kT3 +
        z * (kT5 +
             z * (kT7 +
                  z * (kT9 +
                       z * (kT11 +
                            z * (kT13 +
                                 z * (kT15 +
                                      z * (kT17 +
                                           z * (kT19 +
                                                z * (kT21 +
                                                     z * (kT23 +
                                                          z * (kT25 +
                                                               z * (kT27 +
                                                                    z * (kT29 +
                                                                         z * (kT31 +
                                                                              z * (kT33 +
                                                                                   z * (kT35 +
                                                                                        z * (kT37 +
                                                                                             z * kT39)))))))))))))))));
    return x + x * (z * poly);
  }
  // e^-44 is below 2^-63: tanh rounds to 1 from 22 on.
  if (a > 22)
    return x < 0 ? -1.0 : 1.0;
  // 1 - 2 / (e^2a + 1), with e^2a, e^2a + 1 and the quotient carried as
  // double-doubles: in plain double their roundings add up to 1.5 ulp.
  double mh, ml;
  int k;
  expParts(2 * a, 0.0, mh, ml, k);
  const double scale = powerOfTwo(k); // k <= 64
  double dh, dl;
  twoSum(mh * scale, 1.0, dh, dl);
  dl += ml * scale;
  const double qh = 2 / dh;
  double p, pe;
  twoProduct(qh, dh, p, pe);
  const double ql = (((2 - p) - pe) - qh * dl) / dh;
  double th, tl;
  twoSum(1.0, -qh, th, tl);
  const double t = th + (tl - ql);
  return x < 0 ? -t : t;
}

double sin(double x) {
  if (isNaN(x) || magnitude(x) == kInf)
    return kNaN;
  if (magnitude(x) < 0x1p-27) // x^3 / 6 is below half an ulp; keeps -0
    return x;
  double hi, lo;
  switch (reduceQuadrant(x, hi, lo)) {
  case 0:
    return sinKernel(hi, lo);
  case 1:
    return cosKernel(hi, lo);
  case 2:
    return -sinKernel(hi, lo);
  default:
    return -cosKernel(hi, lo);
  }
}

double cos(double x) {
  if (isNaN(x) || magnitude(x) == kInf)
    return kNaN;
  if (magnitude(x) < 0x1p-27) // 1 - x^2 / 2 rounds to 1
    return 1.0;
  double hi, lo;
  switch (reduceQuadrant(x, hi, lo)) {
  case 0:
    return cosKernel(hi, lo);
  case 1:
    return -sinKernel(hi, lo);
  case 2:
    return -cosKernel(hi, lo);
  default:
    return sinKernel(hi, lo);
  }
}

double pow(double x, double y) {
  if (y == 0 || x == 1)
    return 1.0;
  if (isNaN(x) || isNaN(y) || x < 0)
    return kNaN;
  if (magnitude(y) == kInf)
    return (x < 1) == (y > 0) ? 0.0 : kInf;
  if (x == 0)
    return y > 0 ? 0.0 : kInf;
  if (x == kInf)
    return y > 0 ? kInf : 0.0;
  if (y == 1)
    return x;
  // x^y = e^(y ln x) with y ln x as th + tl: the product's rounding, up to
  // 2^-53 |y ln x|, would otherwise be an error of up to 354 ulp.
  double lh, ll;
  logDoubleDouble(x, lh, ll);
  const double t = y * lh;
  if (t > kExpMax + 1) // also guards the split in twoProduct against
    return kInf;       // overflow
  if (t < kExpMin - 1)
    return 0.0;
  double th, tl;
  twoProduct(y, lh, th, tl);
  tl += y * ll;
  double sh, sl;
  fastTwoSum(th, tl, sh, sl);
  if (sh > kExpMax)
    return kInf;
  if (sh < kExpMin)
    return 0.0;
  return expCore(sh, sl);
}

float expf(float x) { return float(hw::exp(double(x))); }
float tanhf(float x) { return float(hw::tanh(double(x))); }
float sinf(float x) { return float(hw::sin(double(x))); }
float cosf(float x) { return float(hw::cos(double(x))); }

namespace {
double logSumExp(const float *x, int64_t n) {
  double hi = x[0], sum = 0;
  for (int64_t i = 1; i < n; ++i)
    hi = x[i] > hi ? x[i] : hi;
  for (int64_t i = 0; i < n; ++i)
    sum += exp(double(x[i]) - hi);
  return hi + log(sum);
}
} // namespace

double negativeLogLikelihood(const float *logits, int64_t vocab,
                             int32_t target) {
  return logSumExp(logits, vocab) - double(logits[target]);
}

double klDivergence(const float *reference, const float *model, int64_t vocab) {
  double lr = logSumExp(reference, vocab), lm = logSumExp(model, vocab);
  double kl = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    double logP = double(reference[i]) - lr;
    kl += exp(logP) * (logP - (double(model[i]) - lm));
  }
  return kl > 0 ? kl : 0.0; // rounding can leave a tiny negative sum
}

} // namespace pccx::hw
