//===- QuantizeRowsTests.cpp - row blocks quantized on threads ------------===//
//
// quantizeAndPackRows gives, for any thread count, the bytes of quantizing
// and packing each row in turn.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/QuantizeRows.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace pccx::hw;

namespace {

TEST(QuantizeRows, SameBytesForEveryThreadCount) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const QuantScheme schemes[] = {{WeightFormat::Int4, ScaleRule::Search},
                                 {WeightFormat::Int4, ScaleRule::AbsMax},
                                 {WeightFormat::Int8, ScaleRule::AbsMax}};
  for (QuantScheme scheme : schemes)
    for (int64_t cols : {1, 77, 1000}) {
      const int64_t rows = 700;
      std::vector<float> in(size_t(rows * cols));
      for (float &v : in)
        v = normal(rng);
      const size_t rowBytes = packedRowBytes(scheme.format, size_t(cols));
      const size_t stride = rowBytes + 5; // the gap must stay untouched
      std::vector<float> expectScales(static_cast<size_t>(rows));
      std::vector<uint8_t> expectBytes(size_t(rows) * stride, 0xAB);
      std::vector<int8_t> codes(static_cast<size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        expectScales[size_t(r)] = quantizeRow(scheme, &in[size_t(r * cols)],
                                              size_t(cols), codes.data());
        packRow(scheme.format, codes.data(), size_t(cols),
                &expectBytes[size_t(r) * stride]);
      }
      for (unsigned threads : {1u, 2u, 3u, 8u, 0u}) {
        std::vector<float> scales(size_t(rows), -1.0f);
        std::vector<uint8_t> bytes(size_t(rows) * stride, 0xAB);
        quantizeAndPackRows(scheme, in.data(), rows, cols, scales.data(),
                            bytes.data(), stride, threads);
        EXPECT_EQ(scales, expectScales)
            << schemeName(scheme) << " cols " << cols << ", " << threads
            << " threads";
        EXPECT_EQ(bytes, expectBytes) << schemeName(scheme) << " cols " << cols
                                      << ", " << threads << " threads";
      }
    }
}

TEST(QuantizeRows, ThreadCountZeroMeansEveryHardwareThread) {
  EXPECT_GE(resolveThreads(0), 1u);
  EXPECT_EQ(resolveThreads(3), 3u);
}

} // namespace
