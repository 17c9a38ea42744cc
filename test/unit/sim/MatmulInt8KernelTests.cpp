//===- MatmulInt8KernelTests.cpp - integer numerics agree bit for bit -----===//
//
// Every kernel of Integer numerics (portable, AVX2, NEON, NEON with sdot:
// whichever this CPU runs) and any split of the features must give the
// bits of the order MatmulInt8Kernels.h defines, which this file
// re-implements on the record bytes and the activations in their natural
// order (an INT4 block's kernel order, its 16 low nibbles then its 16 high
// ones, is written out here on its own).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulInt8Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace pccx::sim;

namespace {

constexpr size_t kBlock = kInt8Block, kGroup = 32;

size_t padTo(size_t n, size_t a) { return (n + a - 1) / a * a; }

struct Case {
  size_t m, n, k;
  bool int4, wScale;
  std::vector<uint8_t> rows; ///< n rows, padding bytes random
  std::vector<float> scales, x;
  size_t rowStride() const { return padTo(int4 ? (k + 1) / 2 : k, 16); }
};

Case randomCase(std::mt19937 &rng, size_t m, size_t n, size_t k, bool int4,
                bool wScale) {
  Case c{m, n, k, int4, wScale, {}, {}, {}};
  c.rows.resize(n * c.rowStride());
  for (uint8_t &b : c.rows)
    b = uint8_t(rng()); // -128 included for INT8
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < n && wScale; ++i)
    c.scales.push_back(std::fabs(normal(rng)) * 0.01f);
  c.x.resize(m * k);
  for (float &v : c.x)
    v = normal(rng) * (rng() % 4 == 0 ? 1000.0f : 1.0f);
  // Some all-zero blocks, whose scale is 0, and zero groups.
  for (size_t r = 0; r < m; ++r) {
    if (k >= 64)
      std::fill_n(&c.x[r * k + 32], 32, 0.0f);
    if (k >= 256)
      std::fill_n(&c.x[r * k + 128], 128, 0.0f);
  }
  return c;
}

int weightAt(const Case &c, size_t row, size_t e) {
  const uint8_t *p = c.rows.data() + row * c.rowStride();
  if (!c.int4)
    return int8_t(p[e]);
  const uint8_t byte = p[e / 2];
  return e % 2 ? int8_t(byte) >> 4 : int8_t(uint8_t(byte << 4)) >> 4;
}

/// The documented operations.
std::vector<float> expected(const Case &c) {
  std::vector<float> out(c.m * c.n);
  const size_t blocks = padTo(c.k, kBlock) / kBlock;
  // Element e of the row (natural order) sits at kernel position pos[e].
  std::vector<size_t> pos(blocks * kBlock);
  for (size_t e = 0; e < pos.size(); ++e)
    pos[e] = e / kGroup * kGroup +
             (c.int4 ? (e % kGroup) % 2 * 16 + (e % kGroup) / 2 : e % kGroup);
  for (size_t r = 0; r < c.m; ++r) {
    std::vector<int> q(blocks * kBlock, 0);
    std::vector<float> s(blocks, 0.0f);
    for (size_t b = 0; b < blocks; ++b) {
      float amax = 0;
      for (size_t i = b * kBlock; i < std::min(c.k, (b + 1) * kBlock); ++i)
        amax = std::max(amax, std::fabs(c.x[r * c.k + i]));
      s[b] = amax / 127.0f;
      for (size_t i = b * kBlock; i < std::min(c.k, (b + 1) * kBlock); ++i)
        q[i] = s[b] > 0 ? int(std::lround(c.x[r * c.k + i] / s[b])) : 0;
    }
    for (size_t f = 0; f < c.n; ++f) {
      float p[16] = {};
      for (size_t b = 0; b < blocks; ++b) {
        long g[16] = {};
        for (size_t e = b * kBlock; e < std::min(c.k, (b + 1) * kBlock); ++e)
          g[(pos[e] % 64) / 4] += long(weightAt(c, f, e)) * q[e];
        for (size_t j = 0; j < 16; ++j)
          p[j] = p[j] + float(g[j]) * s[b];
      }
      for (size_t half = 8; half >= 1; half /= 2)
        for (size_t j = 0; j < half; ++j)
          p[j] = p[j] + p[j + half];
      out[r * c.n + f] = c.wScale ? c.scales[f] * p[0] : p[0];
    }
  }
  return out;
}

/// The kernels' inputs: activations in kernel order, quantized.
std::vector<float> run(const Case &c, Int8Isa isa, size_t split) {
  const size_t kPadded = padTo(c.k, kGroup),
               stride = padTo(kPadded, kInt8RowAlign);
  std::vector<int8_t> codes(c.m * stride, 0);
  std::vector<float> blockScales(c.m * stride / kBlock, 0.0f);
  std::vector<int32_t> codeSums(c.m * stride / kBlock * kInt8Partials);
  std::vector<float> row(kPadded), order(kPadded);
  for (size_t r = 0; r < c.m; ++r) {
    std::fill(row.begin(), row.end(), 0.0f);
    std::copy_n(&c.x[r * c.k], c.k, row.begin());
    if (c.int4) // 16 low nibbles (even elements), then the odd ones
      for (size_t b = 0; b < kPadded; b += kGroup)
        for (size_t i = 0; i < 16; ++i) {
          order[b + i] = row[b + 2 * i];
          order[b + 16 + i] = row[b + 2 * i + 1];
        }
    else
      order = row;
    quantizeActivationsInt8(order.data(), kPadded, stride, &codes[r * stride],
                            &blockScales[r * stride / kBlock],
                            &codeSums[r * stride / kBlock * kInt8Partials]);
  }
  std::vector<float> out(c.m * c.n, -1.0f);
  MatmulInt8Job job{c.rows.data(),     c.rowStride(),   c.int4,
                    kPadded / kGroup,   stride,          c.m,
                    c.n,                codes.data(),    blockScales.data(),
                    codeSums.data(),    c.wScale ? c.scales.data() : nullptr,
                    out.data()};
  for (size_t n0 = 0; n0 < c.n; n0 += split)
    matmulInt8Features(job, n0, std::min(c.n, n0 + split), isa);
  return out;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST(MatmulInt8, EveryKernelGivesTheDocumentedBits) {
  std::mt19937 rng(7);
  int checked = 0;
  for (Int8Isa isa : {Int8Isa::Scalar, Int8Isa::Avx2, Int8Isa::Avx512Vnni,
                      Int8Isa::Neon, Int8Isa::NeonDot}) {
    if (!int8IsaAvailable(isa))
      continue;
    for (size_t k : {16, 32, 48, 64, 100, 160, 208, 256, 272, 300, 1024})
      for (bool int4 : {false, true})
        for (size_t m : {1, 2, 3, 5}) {
          const Case c = randomCase(rng, m, 19, k, int4, k % 3 != 0);
          const std::vector<float> want = expected(c);
          for (size_t split : {size_t(19), size_t(4), size_t(1)})
            EXPECT_TRUE(sameBits(run(c, isa, split), want))
                << int8IsaName(isa) << " k " << k << " int4 " << int4
                << " m " << m << " split " << split;
          ++checked;
        }
  }
  EXPECT_GE(checked, 88);
  std::printf("kernels checked on this CPU: scalar%s%s%s%s (best: %s)\n",
              int8IsaAvailable(Int8Isa::Avx2) ? ", avx2" : "",
              int8IsaAvailable(Int8Isa::Avx512Vnni) ? ", avx512-vnni" : "",
              int8IsaAvailable(Int8Isa::Neon) ? ", neon" : "",
              int8IsaAvailable(Int8Isa::NeonDot) ? ", neon-dotprod" : "",
              int8IsaName(bestInt8Isa()));
}

TEST(MatmulInt8, QuantizesRoundingHalfAwayAndKeepsNaN) {
  std::vector<float> x(kBlock, 0.0f);
  x[0] = 127.0f;  // the scale is 1
  x[1] = 2.5f;    // half away from zero: 3
  x[2] = -2.5f;   // -3
  x[3] = 0.49f;   // 0
  x[4] = -127.0f;
  x[5] = 0.49999997f; // below one half: 0 (v + 0.5 would round to 1)
  x[64] = 1.5f;   // partial 0 too
  x[70] = -2.5f;  // partial 1
  std::vector<int8_t> codes(2 * kBlock, 5);
  std::vector<int32_t> sums(2 * kInt8Partials, 9);
  float scale[2] = {-1, -1};
  // One block given, the second one zero padding.
  quantizeActivationsInt8(x.data(), kBlock, 2 * kBlock, codes.data(), scale,
                          sums.data());
  EXPECT_EQ(scale[0], 1.0f);
  EXPECT_EQ(scale[1], 0.0f);
  EXPECT_EQ(codes[0], 127);
  EXPECT_EQ(codes[1], 3);
  EXPECT_EQ(codes[2], -3);
  EXPECT_EQ(codes[3], 0);
  EXPECT_EQ(codes[4], -127);
  EXPECT_EQ(codes[5], 0);
  EXPECT_EQ(codes[64], 2);
  EXPECT_EQ(codes[70], -3);
  EXPECT_EQ(sums[0], 127 + 3 - 3 + 0 + 2);
  EXPECT_EQ(sums[1], -127 + 0 - 3);
  for (size_t i = kBlock; i < 2 * kBlock; ++i)
    EXPECT_EQ(codes[i], 0) << i;
  for (size_t j = kInt8Partials; j < 2 * kInt8Partials; ++j)
    EXPECT_EQ(sums[j], 0) << j;
  // A non-finite activation makes its block's scale NaN, so the sums it
  // joins are NaN (and the step is refused), as in the other numerics.
  x[5] = INFINITY;
  quantizeActivationsInt8(x.data(), kBlock, kBlock, codes.data(), scale,
                          sums.data());
  EXPECT_TRUE(std::isnan(scale[0]));
  x[5] = NAN;
  quantizeActivationsInt8(x.data(), kBlock, kBlock, codes.data(), scale,
                          sums.data());
  EXPECT_TRUE(std::isnan(scale[0]));
  std::fill(x.begin(), x.end(), 0.0f);
  quantizeActivationsInt8(x.data(), kBlock, kBlock, codes.data(), scale,
                          sums.data());
  EXPECT_EQ(scale[0], 0.0f);
}
