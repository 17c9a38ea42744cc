//===- NumericsTests.cpp - hw/numerics: 16-bit floats, quantization -------===//
//
// Expected values are worked out by hand from the format definitions, not
// produced by the code under test.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/HalfFloat.h"
#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace pccx::hw;

namespace {

TEST(HalfFloat, Bf16KnownEncodings) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(roundToBf16(1.00390625f), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(roundToBf16(1.01171875f), 1.015625f);
  EXPECT_TRUE(std::isnan(roundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(roundToBf16(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());
}

TEST(HalfFloat, EveryNaNNarrowsToTheCanonicalBf16NaN) {
  // Both signs, quiet and signalling, every payload (a stride through the
  // 2^23 - 1 of each sign, and the ends).
  std::vector<uint16_t> row;
  std::vector<float> in;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t payload = 1; payload < 0x800000u; payload += 4093)
      in.push_back(bitsFloat(sign | 0x7f800000u | payload));
  in.push_back(bitsFloat(0xffffffffu));
  in.push_back(bitsFloat(0x7fffffffu));
  in.push_back(bitsFloat(0xffc00000u)); // x86-64's default NaN
  for (float nan : in) {
    EXPECT_EQ(floatToBf16(nan), 0x7FC0) << std::hex << floatBits(nan);
    EXPECT_EQ(floatBits(canonicalizeNan(nan)), 0x7FC00000u);
  }
  row.resize(in.size());
  floatToBf16Row(in.data(), row.data(), in.size());
  for (uint16_t b : row)
    EXPECT_EQ(b, 0x7FC0);
  // Everything else keeps its bits, infinities included.
  for (float v : {0.0f, -0.0f, 1.5f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min()})
    EXPECT_EQ(floatBits(canonicalizeNan(v)), floatBits(v));
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(HalfFloat, F16KnownEncodings) {
  EXPECT_EQ(floatToF16(1.0f), 0x3C00);
  EXPECT_EQ(floatToF16(-2.0f), 0xC000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF);   // largest finite
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);   // rounds to infinity
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000); // tie to even: zero
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -26)), 0x0001); // above the tie
  EXPECT_EQ(f16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7E00)));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even.
  EXPECT_EQ(floatToF16(1.00048828125f), 0x3C00);
  EXPECT_EQ(floatToF16(1.00146484375f), 0x3C02);
}

TEST(Quantize, Int4AndInt8Rows) {
  const float row[4] = {7.0f, -3.5f, 0.49f, -7.0f};
  int8_t q4[4], q8[4];
  EXPECT_FLOAT_EQ(quantizeRow(WeightFormat::Int4, row, 4, q4), 1.0f);
  // round half away from zero: -3.5 -> -4.
  EXPECT_EQ(std::vector<int8_t>(q4, q4 + 4), (std::vector<int8_t>{7, -4, 0, -7}));
  const float scale8 = quantizeRow(WeightFormat::Int8, row, 4, q8);
  EXPECT_FLOAT_EQ(scale8, 7.0f / 127.0f);
  // -3.5 / (7/127) = -63.5 -> -64; 0.49 / (7/127) = 8.89 -> 9.
  EXPECT_EQ(std::vector<int8_t>(q8, q8 + 4),
            (std::vector<int8_t>{127, -64, 9, -127}));
  const float zeros[3] = {0, 0, 0};
  EXPECT_EQ(quantizeRow(WeightFormat::Int8, zeros, 3, q8), 0.0f);
  EXPECT_EQ(q8[0], 0);
}

TEST(Quantize, PackUnpackRoundTrip) {
  const int8_t q[5] = {-8, 7, -1, 3, 5};
  uint8_t packed[5] = {};
  packRow(WeightFormat::Int4, q, 5, packed);
  // Element 2j in the low nibble, 2j+1 in the high nibble; odd tail high 0.
  EXPECT_EQ(packed[0], 0x78);
  EXPECT_EQ(packed[1], 0x3F);
  EXPECT_EQ(packed[2], 0x05);
  float out[5];
  unpackRow(WeightFormat::Int4, packed, 5, 0.5f, out);
  EXPECT_EQ(std::vector<float>(out, out + 5),
            (std::vector<float>{-4.0f, 3.5f, -0.5f, 1.5f, 2.5f}));
  const int8_t q8[3] = {-127, 0, 100};
  uint8_t p8[3];
  packRow(WeightFormat::Int8, q8, 3, p8);
  EXPECT_EQ(p8[0], 0x81);
  unpackRow(WeightFormat::Int8, p8, 3, 2.0f, out);
  EXPECT_EQ(std::vector<float>(out, out + 3),
            (std::vector<float>{-254.0f, 0.0f, 200.0f}));
}

TEST(Quantize, RecordSizes) {
  // docs/isa-semantics.md section 6: N = 3, K = 5, INT4 -> 16 + 3 * 16.
  EXPECT_EQ(recordBytes(WeightFormat::Int4, 3, 5), 64);
  // INT8, N = 5, K = 20: pad16(20) = 32 scale bytes, rows of pad16(20) = 32.
  EXPECT_EQ(recordBytes(WeightFormat::Int8, 5, 20), 32 + 5 * 32);
  EXPECT_EQ(recordRowStride(WeightFormat::Int4, 33), 32);
  EXPECT_EQ(packedRowBytes(WeightFormat::Int4, 33), 17u);
}

TEST(Quantize, SchemeNames) {
  WeightFormat f;
  ASSERT_TRUE(parseScheme("int8_per_row", &f));
  EXPECT_EQ(f, WeightFormat::Int8);
  EXPECT_STREQ(schemeName(f), "int8_per_row");
  ASSERT_TRUE(parseFormatName("int4", &f));
  EXPECT_EQ(f, WeightFormat::Int4);
  EXPECT_FALSE(parseScheme("int3_per_row", &f));
  EXPECT_FALSE(parseFormatName("f32", &f));
}

double squaredRowError(const float *row, const int8_t *q, float scale,
                       size_t n) {
  double e = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = double(row[i]) - double(float(q[i]) * scale);
    e += d * d;
  }
  return e;
}

TEST(Quantize, SearchedInt4ScalesNeverLoseToAbsmax) {
  // Deterministic heavy-tailed rows (a few large values, many small ones),
  // the case where absmax wastes most of the 16 levels.
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1u << 24) - 0.5f;
  };
  double absmaxTotal = 0, searchTotal = 0;
  for (int r = 0; r < 200; ++r) {
    std::vector<float> row(64);
    for (float &v : row)
      v = next() * (next() > 0.45f ? 8.0f : 1.0f);
    int8_t qa[64], qs[64];
    float sa = quantizeRowInt4(row.data(), 64, qa);
    float ss = quantizeRowInt4Search(row.data(), 64, qs);
    for (int8_t c : qs) {
      EXPECT_GE(c, -8);
      EXPECT_LE(c, 7);
    }
    double ea = squaredRowError(row.data(), qa, sa, 64);
    double es = squaredRowError(row.data(), qs, ss, 64);
    EXPECT_LE(es, ea) << "row " << r;
    absmaxTotal += ea;
    searchTotal += es;
    // The scheme API gives the same codes, and fake quantization their
    // values.
    int8_t qv[64];
    QuantScheme search{WeightFormat::Int4, ScaleRule::Search};
    EXPECT_EQ(quantizeRow(search, row.data(), 64, qv), ss);
    EXPECT_EQ(std::vector<int8_t>(qv, qv + 64),
              std::vector<int8_t>(qs, qs + 64));
    std::vector<float> fake = row;
    fakeQuantizeRow(search, fake.data(), 64);
    for (size_t i = 0; i < 64; ++i)
      EXPECT_EQ(fake[i], float(qs[i]) * ss);
  }
  EXPECT_LT(searchTotal, 0.8 * absmaxTotal);
}

TEST(Quantize, SearchedInt4KeepsAbsmaxCodesForNonFiniteRows) {
  // Rows kept by --allow-nonfinite: the search must not convert NaN or an
  // infinity to int (the sanitizer suite's float-cast-overflow check).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf, -inf}) {
    float row[9] = {0.5f, -1, 2, bad, 3, -4, 0.25f, 1, -2};
    int8_t q[9], qa[9];
    float scale = quantizeRowInt4Search(row, 9, q);
    float sa = quantizeRowInt4(row, 9, qa);
    EXPECT_EQ(std::memcmp(&scale, &sa, sizeof scale), 0) << bad;
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(q[i], qa[i]) << bad << " at " << i;
      EXPECT_TRUE(q[i] >= -8 && q[i] <= 7) << bad << " at " << i;
    }
  }
}

TEST(Quantize, SearchedInt4KnownRows) {
  // One outlier and many values at 1/10 of it: absmax (scale 10/7) rounds
  // them to 1 (value 1.43); the search finds a better compromise.
  float row[8] = {10, 1, 1, 1, 1, 1, 1, -1};
  int8_t q[8], qa[8];
  float scale = quantizeRowInt4Search(row, 8, q);
  float sa = quantizeRowInt4(row, 8, qa);
  EXPECT_LT(squaredRowError(row, q, scale, 8),
            0.9 * squaredRowError(row, qa, sa, 8));
  // A negative outlier can use code -8, which absmax / 7 never does.
  row[0] = -10;
  scale = quantizeRowInt4Search(row, 8, q);
  sa = quantizeRowInt4(row, 8, qa);
  EXPECT_EQ(q[0], -8);
  EXPECT_LT(squaredRowError(row, q, scale, 8),
            0.5 * squaredRowError(row, qa, sa, 8));
  // An all-zero row keeps scale 0 and codes 0.
  const float zeros[3] = {0, 0, 0};
  int8_t qz[3] = {1, 1, 1};
  EXPECT_EQ(quantizeRowInt4Search(zeros, 3, qz), 0.0f);
  EXPECT_EQ(std::vector<int8_t>(qz, qz + 3), std::vector<int8_t>(3, 0));
  // Values exactly on an absmax grid stay exact.
  const float grid[4] = {7, -7, 3, 0};
  int8_t qg[4];
  float sg = quantizeRowInt4Search(grid, 4, qg);
  EXPECT_EQ(squaredRowError(grid, qg, sg, 4), 0.0);
  // INT8 under the search rule stays absmax.
  int8_t q8[4], q8a[4];
  EXPECT_EQ(quantizeRow(QuantScheme{WeightFormat::Int8, ScaleRule::Search},
                        grid, 4, q8),
            quantizeRow(WeightFormat::Int8, grid, 4, q8a));
}

TEST(Quantize, SchemeAndRuleNames) {
  QuantScheme s;
  ASSERT_TRUE(parseScheme("int4_per_row_search", &s));
  EXPECT_EQ(s.format, WeightFormat::Int4);
  EXPECT_EQ(s.scales, ScaleRule::Search);
  EXPECT_EQ(schemeName(s), "int4_per_row_search");
  ASSERT_TRUE(parseScheme("int4_per_row", &s));
  EXPECT_EQ(s.scales, ScaleRule::AbsMax);
  ASSERT_TRUE(parseScheme("int8_per_row", &s));
  EXPECT_EQ(s.format, WeightFormat::Int8);
  EXPECT_FALSE(parseScheme("int4_per_group", &s));
  WeightFormat f;
  ASSERT_TRUE(parseScheme("int4_per_row_search", &f));
  EXPECT_EQ(f, WeightFormat::Int4);
  ScaleRule rule;
  ASSERT_TRUE(parseScaleRule("search", &rule));
  EXPECT_EQ(rule, ScaleRule::Search);
  EXPECT_STREQ(scaleRuleName(ScaleRule::AbsMax), "absmax");
  EXPECT_FALSE(parseScaleRule("mse", &rule));
}

TEST(Quantize, GroupSchemeNames) {
  QuantScheme s;
  ASSERT_TRUE(parseScheme("int4_g64_search", &s));
  EXPECT_EQ(s.format, WeightFormat::Int4);
  EXPECT_EQ(s.scales, ScaleRule::Search);
  EXPECT_EQ(s.group, 64);
  EXPECT_EQ(schemeName(s), "int4_g64_search");
  ASSERT_TRUE(parseScheme("int4_g32", &s));
  EXPECT_EQ(s.scales, ScaleRule::AbsMax);
  EXPECT_EQ(s.group, 32);
  EXPECT_EQ(schemeName(s), "int4_g32");
  ASSERT_TRUE(parseScheme("int4_g128_search_gptq", &s));
  EXPECT_EQ(s.rounding, Rounding::Gptq);
  EXPECT_EQ(s.group, 128);
  ASSERT_TRUE(parseScheme("int4_per_row_gptq", &s));
  EXPECT_EQ(s.group, 0);
  EXPECT_EQ(s.rounding, Rounding::Gptq);
  // Not a multiple of 32, zero, leading zeros, too wide, no digits.
  for (const char *bad : {"int4_g48_search", "int4_g0", "int4_g032",
                          "int4_g65536", "int4_g_search", "int4_g64_per_row",
                          "int4_g99999999999999999999"})
    EXPECT_FALSE(parseScheme(bad, &s)) << bad;
  EXPECT_EQ(checkGroup(0), "");
  EXPECT_EQ(checkGroup(96), "");
  EXPECT_NE(checkGroup(16), "");
  EXPECT_NE(checkGroup(-32), "");
}

TEST(Quantize, GroupScalesQuantizeEachGroupAsARow) {
  // 80 columns in groups of 32: two whole groups and one of 16.
  std::vector<float> row(80);
  for (size_t i = 0; i < row.size(); ++i)
    row[i] = float(std::sin(0.37 * double(i))) * (i < 32 ? 0.01f : 1.0f);
  QuantScheme grouped{WeightFormat::Int4, ScaleRule::Search, Rounding::Nearest,
                      32};
  EXPECT_EQ(groupCount(grouped, 80), 3);
  EXPECT_EQ(groupWidth(grouped, 80), 32);
  std::vector<int8_t> q(80), qg(32);
  float scales[3];
  quantizeRowGroups(grouped, row.data(), row.size(), q.data(), scales);
  const size_t starts[] = {0, 32, 64}, widths[] = {32, 32, 16};
  for (int g = 0; g < 3; ++g) {
    const float s = quantizeRowInt4Search(row.data() + starts[g], widths[g],
                                          qg.data());
    EXPECT_EQ(scales[g], s) << g;
    for (size_t i = 0; i < widths[g]; ++i)
      EXPECT_EQ(q[starts[g] + i], qg[i]) << g << " " << i;
  }
  // The small first group keeps its own scale: far smaller error than one
  // scale for the whole row.
  std::vector<float> byGroup(row), byRow(row);
  fakeQuantizeRow(grouped, byGroup.data(), byGroup.size());
  fakeQuantizeRow(QuantScheme{WeightFormat::Int4, ScaleRule::Search},
                  byRow.data(), byRow.size());
  double groupErr = 0, rowErr = 0;
  for (size_t i = 0; i < 32; ++i) {
    groupErr += std::abs(byGroup[i] - row[i]);
    rowErr += std::abs(byRow[i] - row[i]);
  }
  EXPECT_LT(groupErr * 10, rowErr);
  EXPECT_EQ(tensorRecordBytes(grouped, 4, 80),
            recordBytes(WeightFormat::Int4, 4, 32) * 2 +
                recordBytes(WeightFormat::Int4, 4, 16));
  EXPECT_EQ(tensorRecordBytes(QuantScheme{}, 4, 80),
            recordBytes(WeightFormat::Int4, 4, 80));
}

} // namespace
