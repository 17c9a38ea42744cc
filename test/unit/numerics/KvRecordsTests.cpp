//===- KvRecordsTests.cpp - KV caches as weight records -------------------===//

#include "hw/numerics/KvRecords.h"
#include "hw/numerics/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace pccx::hw;

namespace {

float scaleAt(const std::vector<uint8_t> &record, int64_t row) {
  float s;
  std::memcpy(&s, record.data() + 4 * row, 4);
  return s;
}

std::vector<float> randomRow(std::mt19937 &rng, int64_t n) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(n));
  for (float &v : row)
    v = dist(rng);
  return row;
}

} // namespace

TEST(KvRecords, SizesFollowTheWeightRecordLayout) {
  // Keys: slots rows of head_dim INT8 codes; values: head_dim rows of slots.
  EXPECT_EQ(keyRecordBytes(23, 16), 96 + 23 * 16);
  EXPECT_EQ(valueRecordBytes(23, 16), 64 + 16 * 32);
  EXPECT_EQ(maskRecordBytes(23), 96 + 23 * 16);
  EXPECT_EQ(keyRecordBytes(527, 256), recordBytes(WeightFormat::Int8, 527, 256));
}

TEST(KvRecords, KeySlotHoldsTheRowQuantizedPerRow) {
  const int64_t slots = 5, d = 32;
  std::vector<uint8_t> record(size_t(keyRecordBytes(slots, d)));
  initKeyRecord(record.data(), slots, d);
  std::mt19937 rng(1);
  std::vector<float> key = randomRow(rng, d), rounded = key;
  const float scale = writeKeySlot(record.data(), slots, d, 3, key.data());
  roundKeyLikeRecord(rounded.data(), d);
  std::vector<int8_t> codes(static_cast<size_t>(d));
  EXPECT_EQ(scale, quantizeRowInt8(key.data(), size_t(d), codes.data()));
  EXPECT_EQ(scaleAt(record, 3), scale);
  EXPECT_EQ(scaleAt(record, 2), 0.0f);
  const uint8_t *row =
      record.data() + recordScaleBytes(slots) + 3 * recordRowStride(WeightFormat::Int8, d);
  for (int64_t i = 0; i < d; ++i) {
    EXPECT_EQ(int8_t(row[i]), codes[size_t(i)]);
    // What the reference attends over is exactly code times scale.
    EXPECT_EQ(rounded[size_t(i)], float(codes[size_t(i)]) * scale);
  }
}

TEST(KvRecords, ValueColumnUsesTheFixedScaleAndNeverClipsANormedRow) {
  const int64_t slots = 7, d = 64;
  std::vector<uint8_t> record(size_t(valueRecordBytes(slots, d)));
  initValueRecord(record.data(), slots, d);
  const float scale = valueRecordScale(d);
  EXPECT_FLOAT_EQ(scale, 8.0f / 127.0f);
  for (int64_t i = 0; i < d; ++i)
    EXPECT_EQ(scaleAt(record, i), scale);
  // The largest element an RMS-normed row can have: all its energy in one
  // element, sqrt(d). It must map to code 127, not beyond.
  std::vector<float> value(static_cast<size_t>(d), 0.0f);
  value[5] = std::sqrt(float(d));
  value[6] = -0.3f;
  writeValueSlot(record.data(), slots, d, 4, value.data());
  const int64_t stride = recordRowStride(WeightFormat::Int8, slots),
                base = recordScaleBytes(d);
  EXPECT_EQ(int8_t(record[size_t(base + 5 * stride + 4)]), 127);
  EXPECT_EQ(int8_t(record[size_t(base + 6 * stride + 4)]),
            int8_t(std::round(-0.3f / scale)));
  EXPECT_EQ(int8_t(record[size_t(base + 5 * stride + 3)]), 0);
  std::vector<float> rounded = value;
  roundValueLikeRecord(rounded.data(), d);
  EXPECT_EQ(rounded[5], 127 * scale);
}

TEST(KvRecords, MasksSeeExactlyTheVisiblePositions) {
  const int64_t slots = 11;
  std::vector<uint8_t> record(size_t(maskRecordBytes(slots)));
  initMaskRecord(record.data(), slots);
  for (int64_t s = 0; s < slots; ++s) {
    EXPECT_EQ(scaleAt(record, s), kMaskedScore);
    EXPECT_EQ(record[size_t(recordScaleBytes(slots) + 16 * s)], 1);
  }
  auto visible = [&](int64_t window, int64_t query, int64_t last) {
    setMaskScales(record.data(), slots, window, query, last);
    std::vector<int64_t> seen;
    for (int64_t s = 0; s < slots; ++s)
      if (scaleAt(record, s) == 0.0f)
        seen.push_back(s);
      else
        EXPECT_EQ(scaleAt(record, s), kMaskedScore);
    return seen;
  };
  // Global attention, nothing wrapped: slots 0..query.
  EXPECT_EQ(visible(0, 3, 3), (std::vector<int64_t>{0, 1, 2, 3}));
  // A prefill row does not see later rows of its own step.
  EXPECT_EQ(visible(0, 1, 3), (std::vector<int64_t>{0, 1}));
  // Sliding window 8 over a ring of 11 (window + 4 rows - 1): at position
  // 20 the visible positions are 13..20, in slots 2..9.
  EXPECT_EQ(visible(8, 20, 20),
            (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8, 9}));
  // Row 0 of a 4-row step at 17..20: positions 10..17; slots 10, 0..6 hold
  // 10 and 11..17; slots 7..9 hold the step's later rows 18..20.
  EXPECT_EQ(visible(8, 17, 20),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 10}));
}
