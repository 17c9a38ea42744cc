//===- SimulatorTests.cpp - functional simulator of the v002 ISA ----------===//
//
// Every expected value below is worked out by hand (or is a textbook
// constant), never by calling simulator code. Instructions are written in
// the disassembly syntax and encoded by hw/isa, so no bit position appears.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/Simulator.h"
#include "test/unit/sim/SimFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace pccx;
using sim::Numerics;
using sim::Simulator;

namespace {

isa::Instruction parse(const std::string &text) {
  isa::Instruction inst;
  std::string err;
  EXPECT_TRUE(isa::assemble(text, inst, &err)) << text << ": " << err;
  return inst;
}

uint64_t encodeText(const std::string &text) {
  uint64_t word = 0;
  std::string err;
  EXPECT_TRUE(isa::encode(parse(text), word, &err)) << text << ": " << err;
  return word;
}

void append(std::vector<uint8_t> &out, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  for (int i = 0; i < 4; ++i)
    out.push_back(uint8_t(u >> (8 * i)));
}

void padTo16(std::vector<uint8_t> &out, size_t from, uint8_t fill = 0) {
  while ((out.size() - from) % 16)
    out.push_back(fill);
}

/// A weight record as docs/isa-semantics.md lays it out: optional fp32
/// scale block, then one row per output feature, each padded to 16 bytes.
std::vector<uint8_t> weightRecord(const std::vector<std::vector<int>> &rows,
                                  bool int4,
                                  const std::vector<float> &scales = {},
                                  uint8_t padFill = 0) {
  std::vector<uint8_t> out;
  if (!scales.empty()) {
    for (float s : scales)
      append(out, s);
    padTo16(out, 0);
  }
  for (const std::vector<int> &row : rows) {
    size_t start = out.size();
    if (int4) {
      for (size_t j = 0; j < row.size(); j += 2) {
        unsigned lo = unsigned(row[j]) & 0xF;
        unsigned hi = j + 1 < row.size() ? unsigned(row[j + 1]) & 0xF
                                         : unsigned(padFill >> 4);
        out.push_back(uint8_t(lo | hi << 4));
      }
    } else {
      for (int v : row)
        out.push_back(uint8_t(int8_t(v)));
    }
    padTo16(out, start, padFill);
  }
  return out;
}

class SimTest : public testsupport::SimFixture {
protected:
  explicit SimTest(Numerics numerics = Numerics::Reference,
                   size_t hostWords = machine::host_window_words)
      : SimFixture(numerics, hostWords) {}

  void memset(const char *bank, unsigned entry, unsigned a, unsigned b,
              unsigned c) {
    ok("memset dest_cache=" + std::string(bank) +
       " dest_addr=" + std::to_string(entry) + " a_value=" + std::to_string(a) +
       " b_value=" + std::to_string(b) + " c_value=" + std::to_string(c));
  }
  float at(uint32_t word, unsigned lane = 0) {
    return get(word, lane + 1)[lane];
  }
  /// Keeps pushed weight bytes alive for the whole test.
  void push(std::vector<uint8_t> bytes) {
    records.push_back(std::move(bytes));
    sim.pushWeightStream(records.back().data(), records.back().size());
  }
  /// Sets e_max to `value` with a findemax GEMV of one INT8 weight.
  void armEmax(float value) {
    memset("weight_shape", 60, 1, 1, 1);
    memset("fmap_shape", 60, 1, 0, 0);
    put(0x1b000, {value});
    push(weightRecord({{1}}, /*int4=*/false));
    ok("gemv dest_reg=0x1b001 src_addr=0x1b000 flags=findemax "
       "size_ptr_addr=60 shape_ptr_addr=60");
  }
  /// Sets the SFU scalar to `value` with a one-element REDUCE_SUM.
  void setScalar(float value) {
    put(0x1b010, {value});
    ok("cvo cvo_func=reduce_sum src_addr=0x1b010 dst_addr=0x1b011 length=1");
  }
  void expectTrap(const std::string &text, const std::string &needle) {
    EXPECT_FALSE(exec(text)) << text;
    EXPECT_NE(err.find(needle), std::string::npos) << err;
    EXPECT_NE(err.find("(" + text.substr(0, text.find(' '))), std::string::npos)
        << err;
  }

  std::vector<std::vector<uint8_t>> records;
};

class HwSimTest : public SimTest {
protected:
  HwSimTest() : SimTest(Numerics::Hardware) {}
};

class SmallHostSimTest : public SimTest {
protected:
  SmallHostSimTest() : SimTest(Numerics::Reference, 64) {}
};

/// Host memory larger than the window, so the window can move.
class BigHostSimTest : public SimTest {
protected:
  BigHostSimTest() : SimTest(Numerics::Reference, 140000) {}
};

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

//===----------------------------------------------------------------------===//
// bf16
//===----------------------------------------------------------------------===//

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(hw::floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(hw::floatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(hw::roundToBf16(1.0f), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the even one (1) wins.
  EXPECT_EQ(hw::roundToBf16(1.00390625f), 1.0f);
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(hw::roundToBf16(1.01171875f), 1.015625f);
  // Just above the halfway point rounds up.
  EXPECT_EQ(hw::roundToBf16(1.0f + 0.00390625f + 0.0000009536743f),
            1.0078125f);
  EXPECT_EQ(hw::roundToBf16(-1.01171875f), -1.015625f);
  // Past (2 - 2^-8)·2^127 rounds to infinity.
  EXPECT_EQ(hw::roundToBf16(std::numeric_limits<float>::max()), kInf);
  EXPECT_EQ(hw::roundToBf16(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(hw::roundToBf16(kNaN)));
  EXPECT_EQ(hw::bf16ToFloat(0x4049), 3.140625f);
}

//===----------------------------------------------------------------------===//
// L2 and constant cache
//===----------------------------------------------------------------------===//

TEST_F(SimTest, L2StartsZeroAndRoundTrips) {
  EXPECT_EQ(at(0), 0.0f);
  EXPECT_EQ(at(machine::l2_words - 1, 7), 0.0f);
  put(0x10, {1, 2, 3, 4, 5, 6, 7, 8, 9.5f});
  EXPECT_EQ(get(0x10, 9), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9.5f}));
  EXPECT_EQ(at(0x11, 0), 9.5f); // element 8 is word + 1, lane 0
  // Reference mode keeps fp32 exactly.
  put(0x20, {1.00390625f});
  EXPECT_EQ(at(0x20), 1.00390625f);
}

TEST_F(SimTest, L2AccessOutOfRangeFails) {
  std::vector<float> v(9, 1.0f);
  EXPECT_TRUE(sim.writeL2(machine::l2_words - 1, v.data(), 8, &err)) << err;
  EXPECT_FALSE(sim.writeL2(machine::l2_words - 1, v.data(), 9, &err));
  EXPECT_NE(err.find("L2 word 0x1c000 does not exist"), std::string::npos)
      << err;
  EXPECT_FALSE(sim.readL2(0x1ffff, v.data(), 1, &err));
  EXPECT_NE(err.find("L2 word 0x1ffff does not exist"), std::string::npos)
      << err;
}

TEST_F(HwSimTest, WriteL2RoundsToBf16) {
  put(0x5, {1.00390625f, 1.01171875f, -3.0f, kInf});
  EXPECT_EQ(get(0x5, 4), (std::vector<float>{1.0f, 1.015625f, -3.0f, kInf}));
  EXPECT_EQ(sim.numerics(), Numerics::Hardware);
}

TEST_F(SimTest, MemsetWritesOneEntryOfOneBank) {
  uint16_t abc[3];
  EXPECT_FALSE(sim.constEntry(0, 7, abc));
  EXPECT_FALSE(sim.constEntry(1, 7, abc));
  memset("weight_shape", 7, 65535, 2, 1);
  ASSERT_TRUE(sim.constEntry(1, 7, abc));
  EXPECT_EQ(abc[0], 65535);
  EXPECT_EQ(abc[1], 2);
  EXPECT_EQ(abc[2], 1);
  EXPECT_FALSE(sim.constEntry(0, 7, abc)); // the other bank is separate
  memset("fmap_shape", 63, 3, 4, 5);
  ASSERT_TRUE(sim.constEntry(0, 63, abc));
  EXPECT_EQ(abc[0], 3);
  memset("fmap_shape", 63, 9, 8, 7); // rewriting replaces all three values
  ASSERT_TRUE(sim.constEntry(0, 63, abc));
  EXPECT_EQ(abc[0], 9);
  EXPECT_EQ(abc[1], 8);
  EXPECT_EQ(abc[2], 7);
  EXPECT_EQ(sim.stats().instructions, 3u);
}

//===----------------------------------------------------------------------===//
// GEMV / GEMM
//===----------------------------------------------------------------------===//

TEST_F(SimTest, GemvInt4) {
  // N = 3, K = 5 (odd: the last byte of each row has a padding nibble).
  memset("weight_shape", 1, 3, 5, 0);
  memset("fmap_shape", 2, 1, 0, 0);
  put(0x100, {0.5f, -1.0f, 2.0f, 0.25f, 4.0f});
  put(0x200, {0, 0, 0, 9, 9, 9, 9, 9});
  push(weightRecord({{1, -2, 3, -4, 5}, {-8, 7, 0, 1, -1}, {2, 2, 2, 2, 2}},
                    /*int4=*/true));
  EXPECT_EQ(sim.weightStreamPending(), 48u);
  ok("gemv dest_reg=0x200 src_addr=0x100 size_ptr_addr=2 shape_ptr_addr=1");
  // 0.5 + 2 + 6 - 1 + 20 | -4 - 7 + 0 + 0.25 - 4 | 2 * 5.75
  EXPECT_EQ(get(0x200, 8),
            (std::vector<float>{27.5f, -14.75f, 11.5f, 9, 9, 9, 9, 9}));
  EXPECT_EQ(sim.weightStreamPending(), 0u);
  EXPECT_TRUE(sim.finishSegment(&err)) << err;
  EXPECT_EQ(sim.stats().macs, 15u);
  EXPECT_EQ(sim.stats().weightBytes, 48u);
}

TEST_F(SimTest, GemvInt4IgnoresPaddingBits) {
  memset("weight_shape", 1, 3, 5, 0);
  memset("fmap_shape", 2, 1, 0, 0);
  put(0x100, {0.5f, -1.0f, 2.0f, 0.25f, 4.0f, 100, 100, 100});
  push(weightRecord({{1, -2, 3, -4, 5}, {-8, 7, 0, 1, -1}, {2, 2, 2, 2, 2}},
                    /*int4=*/true, {}, /*padFill=*/0x77));
  ok("gemv dest_reg=0x200 src_addr=0x100 size_ptr_addr=2 shape_ptr_addr=1");
  EXPECT_EQ(get(0x200, 3), (std::vector<float>{27.5f, -14.75f, 11.5f}));
}

TEST_F(SimTest, GemvInt4WithScale) {
  memset("weight_shape", 0, 2, 4, 0);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {1, 1, 2, 2});
  push(weightRecord({{7, -8, 1, 0}, {-1, -1, -1, -1}}, true, {0.25f, 3.0f}));
  EXPECT_EQ(sim.weightStreamPending(), 16u + 2 * 16u);
  ok("gemv dest_reg=0x20 src_addr=0x10 flags=w_scale size_ptr_addr=0 "
     "shape_ptr_addr=0");
  // (7 - 8 + 2 + 0) * 0.25 and (-6) * 3
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{0.25f, -18.0f}));
}

TEST_F(SimTest, GemvInt8WithScale) {
  memset("weight_shape", 0, 2, 3, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {0.5f, 0.25f, -2.0f});
  push(weightRecord({{100, -128, 1}, {-3, 0, 127}}, false, {0.5f, -2.0f}));
  ok("gemv dest_reg=0x20 src_addr=0x10 flags=w_scale size_ptr_addr=0 "
     "shape_ptr_addr=0");
  // (50 - 32 - 2) * 0.5 and (-1.5 + 0 - 254) * -2
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{8.0f, 511.0f}));
  EXPECT_EQ(sim.stats().weightBytes, 48u);
}

TEST_F(SimTest, GemvInt8WithoutScale) {
  memset("weight_shape", 0, 1, 20, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  std::vector<float> x(20, 0.5f);
  put(0x10, x);
  std::vector<int> row(20, -2);
  row[19] = 127;
  push(weightRecord({row}, false));
  EXPECT_EQ(sim.weightStreamPending(), 32u);
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  EXPECT_EQ(at(0x20), 19 * -1.0f + 63.5f);
}

TEST_F(SimTest, GemvAccumulates) {
  memset("weight_shape", 0, 2, 4, 0);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {1, 1, 2, 2});
  put(0x20, {10, 20});
  push(weightRecord({{7, -8, 1, 0}, {-1, -1, -1, -1}}, true, {0.25f, 3.0f}));
  ok("gemv dest_reg=0x20 src_addr=0x10 flags=accm|w_scale size_ptr_addr=0 "
     "shape_ptr_addr=0");
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{10.25f, 2.0f}));
}

TEST_F(SimTest, GemvParallelLaneHasNoFunctionalEffect) {
  memset("weight_shape", 0, 1, 2, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {3, 4});
  for (unsigned lanes = 0; lanes <= 4; ++lanes) {
    push(weightRecord({{2, -1}}, false));
    ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0 "
       "parallel_lane=" +
       std::to_string(lanes));
    EXPECT_EQ(at(0x20), 2.0f);
  }
}

TEST_F(SimTest, GemmRowsWithStrides) {
  // M = 2 rows, source stride 2 words, destination stride 3 words.
  memset("weight_shape", 3, 2, 3, 1);
  memset("fmap_shape", 4, 2, 2, 3);
  put(100, {1, 2, 3});
  put(102, {-1, 0.5f, 4});
  for (uint32_t w = 200; w < 206; ++w)
    put(w, {7, 7});
  push(weightRecord({{1, 1, 1}, {2, -1, 0}}, false));
  ok("gemm dest_reg=200 src_addr=100 size_ptr_addr=4 shape_ptr_addr=3");
  EXPECT_EQ(get(200, 3), (std::vector<float>{6, 0, 0}));
  EXPECT_EQ(get(203, 2), (std::vector<float>{3.5f, -2.5f}));
  EXPECT_EQ(get(201, 2), (std::vector<float>{7, 7})); // between the rows
  EXPECT_EQ(get(202, 2), (std::vector<float>{7, 7}));
  EXPECT_EQ(sim.weightStreamPending(), 0u); // one record for both rows
  EXPECT_EQ(sim.stats().macs, 12u);
}

TEST_F(SimTest, GemmDefaultStridesArePackedRows) {
  // K = 9 needs 2 words per input row; N = 2 needs 1 word per output row.
  memset("weight_shape", 3, 2, 9, 0);
  memset("fmap_shape", 4, 3, 0, 0);
  put(10, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  put(12, {0, 0, 0, 0, 0, 0, 0, 0, 2});
  put(14, {1, 0, 0, 0, 0, 0, 0, 0, -1});
  push(weightRecord({{1, 1, 1, 1, 1, 1, 1, 1, 1}, {-1, 0, 0, 0, 0, 0, 0, 0, 3}},
                    true));
  ok("gemm dest_reg=20 src_addr=10 size_ptr_addr=4 shape_ptr_addr=3");
  EXPECT_EQ(get(20, 2), (std::vector<float>{9, 2}));
  EXPECT_EQ(get(21, 2), (std::vector<float>{2, 6}));
  EXPECT_EQ(get(22, 2), (std::vector<float>{0, -4}));
}

TEST_F(SimTest, RecordMaySpanSeveralPushes) {
  memset("weight_shape", 0, 2, 4, 0);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {1, 1, 2, 2});
  std::vector<uint8_t> rec =
      weightRecord({{7, -8, 1, 0}, {-1, -1, -1, -1}}, true, {0.25f, 3.0f});
  push(std::vector<uint8_t>(rec.begin(), rec.begin() + 3));
  push(std::vector<uint8_t>(rec.begin() + 3, rec.begin() + 21));
  push(std::vector<uint8_t>(rec.begin() + 21, rec.end()));
  ok("gemv dest_reg=0x20 src_addr=0x10 flags=w_scale size_ptr_addr=0 "
     "shape_ptr_addr=0");
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{0.25f, -18.0f}));
  EXPECT_TRUE(sim.finishSegment(&err)) << err;
}

TEST_F(SimTest, ConsecutiveRecordsInOneSpan) {
  memset("weight_shape", 0, 1, 2, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {3, 4});
  std::vector<uint8_t> both = weightRecord({{1, 0}}, false);
  std::vector<uint8_t> second = weightRecord({{0, 1}}, false);
  both.insert(both.end(), second.begin(), second.end());
  push(both);
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  ok("gemv dest_reg=0x21 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  EXPECT_EQ(at(0x20), 3.0f);
  EXPECT_EQ(at(0x21), 4.0f);
  EXPECT_TRUE(sim.finishSegment(&err)) << err;
}

TEST_F(HwSimTest, GemvRoundsOnceOnStore) {
  memset("weight_shape", 0, 1, 2, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {256, 1.5f});
  push(weightRecord({{1, 1}}, false));
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  // 257.5 is not a bf16; its neighbours are 256 and 258.
  EXPECT_EQ(at(0x20), 258.0f);

  // The sum 1 + 2^-8 + 2^-9 is formed in fp32 and rounded once (to
  // 1 + 2^-7); rounding after each addition would have given 1.
  memset("weight_shape", 1, 1, 3, 1);
  put(0x30, {1.0f, 0.00390625f, 0.001953125f});
  push(weightRecord({{1, 1, 1}}, false));
  ok("gemv dest_reg=0x31 src_addr=0x30 size_ptr_addr=0 shape_ptr_addr=1");
  EXPECT_EQ(at(0x31), 1.0078125f);

  // accm forms 1 + 2^-8 in fp32; the stored sum ties to even (1).
  memset("weight_shape", 2, 1, 1, 1);
  put(0x40, {0.00390625f});
  put(0x41, {1.0f});
  push(weightRecord({{1}}, false));
  ok("gemv dest_reg=0x41 src_addr=0x40 flags=accm size_ptr_addr=0 "
     "shape_ptr_addr=2");
  EXPECT_EQ(at(0x41), 1.0f);
}

TEST_F(SimTest, ReferenceDoesNotRound) {
  memset("weight_shape", 0, 1, 2, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {256, 1.5f});
  push(weightRecord({{1, 1}}, false));
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  EXPECT_EQ(at(0x20), 257.5f);
}

TEST_F(SimTest, ResultsDoNotDependOnThreadCount) {
  const unsigned n = 300, k = 1000;
  std::vector<std::vector<int>> w(n, std::vector<int>(k));
  std::vector<float> scales(n), x(k);
  uint32_t seed = 7;
  auto next = [&] {
    seed = seed * 1103515245u + 12345u;
    return seed >> 16;
  };
  for (auto &row : w)
    for (int &v : row)
      v = int(next() % 16) - 8;
  for (float &s : scales)
    s = float(next() % 1000) / 997.0f;
  for (float &v : x)
    v = float(int(next() % 2001) - 1000) / 313.0f;
  std::vector<uint8_t> rec = weightRecord(w, true, scales);

  std::vector<float> first;
  for (unsigned threads : {1u, 2u, 3u}) {
    Simulator s(Numerics::Reference);
    s.setThreads(threads);
    ASSERT_TRUE(s.writeL2(0, x.data(), k, &err)) << err;
    ASSERT_TRUE(s.execute(parse("memset dest_cache=weight_shape dest_addr=0 "
                                "a_value=300 b_value=1000 c_value=0"),
                          &err))
        << err;
    ASSERT_TRUE(s.execute(parse("memset dest_cache=fmap_shape dest_addr=0 "
                                "a_value=1"),
                          &err))
        << err;
    s.pushWeightStream(rec.data(), rec.size());
    ASSERT_TRUE(s.execute(parse("gemv dest_reg=0x1000 src_addr=0 "
                                "flags=w_scale size_ptr_addr=0 "
                                "shape_ptr_addr=0"),
                          &err))
        << err;
    std::vector<float> y(n);
    ASSERT_TRUE(s.readL2(0x1000, y.data(), n, &err)) << err;
    if (first.empty()) {
      first = y;
      // Agrees with a plain double-precision dot product to fp32 accuracy.
      for (unsigned i = 0; i < n; ++i) {
        double ref = 0, mag = 0;
        for (unsigned j = 0; j < k; ++j) {
          ref += double(w[i][j]) * x[j];
          mag += std::fabs(double(w[i][j]) * x[j]);
        }
        EXPECT_NEAR(y[i], ref * scales[i], 1e-5 * mag * scales[i] + 1e-6)
            << "feature " << i;
      }
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), y.data(), n * sizeof(float)))
          << threads << " threads";
    }
  }
}

//===----------------------------------------------------------------------===//
// e_max: findemax and sub_emax
//===----------------------------------------------------------------------===//

TEST_F(SimTest, SoftmaxThroughFindemaxAndSubEmax) {
  EXPECT_FALSE(sim.emaxArmed());
  // Scores [1, 3, 2] from a GEMV with identity-like INT8 weights.
  std::vector<uint64_t> program = {
      encodeText("memset dest_cache=weight_shape dest_addr=0 a_value=3 "
                 "b_value=3 c_value=1"),
      encodeText("memset dest_cache=fmap_shape dest_addr=0 a_value=1"),
      encodeText("gemv dest_reg=0x20 src_addr=0x10 flags=findemax "
                 "size_ptr_addr=0 shape_ptr_addr=0"),
      encodeText("cvo cvo_func=exp src_addr=0x20 dst_addr=0x20 length=3 "
                 "flags=sub_emax async=1"),
      encodeText("cvo cvo_func=reduce_sum src_addr=0x20 dst_addr=0x30 "
                 "length=3 async=1"),
      encodeText("cvo cvo_func=scale src_addr=0x20 dst_addr=0x20 length=3 "
                 "flags=recip_scale async=1"),
  };
  put(0x10, {1, 3, 2});
  push(weightRecord({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, false));
  ASSERT_TRUE(sim.run(program.data(), program.size(), &err)) << err;
  EXPECT_TRUE(sim.emaxArmed());
  EXPECT_EQ(sim.emax(), 3.0f);
  // e^-2 + e^0 + e^-1
  EXPECT_NEAR(at(0x30), 1.5032147244080551, 2e-7);
  EXPECT_TRUE(sim.scalarValid());
  EXPECT_NEAR(sim.scalar(), 1.5032147244080551, 2e-7);
  std::vector<float> p = get(0x20, 3);
  EXPECT_NEAR(p[0], 0.09003057317038046, 1e-7);
  EXPECT_NEAR(p[1], 0.6652409557748218, 1e-7);
  EXPECT_NEAR(p[2], 0.24472847105479764, 1e-7);
  EXPECT_EQ(sim.outstandingAsync(), 3u);
  sim.sync();
  EXPECT_EQ(sim.outstandingAsync(), 0u);
  EXPECT_TRUE(sim.finishSegment(&err)) << err;
}

TEST_F(SimTest, FindemaxAccumulatesUntilUsedThenRestarts) {
  memset("weight_shape", 0, 2, 1, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {1});
  const char *gemv = "gemv dest_reg=0x20 src_addr=0x10 flags=findemax "
                     "size_ptr_addr=0 shape_ptr_addr=0";
  // First GEMV writes [-3, -1]: e_max starts from -inf, not 0.
  push(weightRecord({{-3}, {-1}}, false));
  ok(gemv);
  EXPECT_EQ(sim.emax(), -1.0f);
  // A second findemax GEMV before any use joins the same maximum.
  push(weightRecord({{-7}, {5}}, false));
  ok(gemv);
  EXPECT_EQ(sim.emax(), 5.0f);
  push(weightRecord({{2}, {4}}, false));
  ok(gemv);
  EXPECT_EQ(sim.emax(), 5.0f);
  // A GEMV without findemax leaves it alone.
  push(weightRecord({{100}, {100}}, false));
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  EXPECT_EQ(sim.emax(), 5.0f);
  // Two CVOs share it.
  put(0x30, {6, 7});
  ok("cvo cvo_func=recip src_addr=0x30 dst_addr=0x31 length=2 "
     "flags=sub_emax");
  EXPECT_EQ(get(0x31, 2), (std::vector<float>{1.0f, 0.5f}));
  ok("cvo cvo_func=exp src_addr=0x32 dst_addr=0x33 length=1 flags=sub_emax");
  EXPECT_NEAR(at(0x33), 0.006737946999085467, 1e-9); // e^-5
  // The next findemax after a use starts afresh.
  push(weightRecord({{-4}, {-6}}, false));
  ok(gemv);
  EXPECT_EQ(sim.emax(), -4.0f);
}

TEST_F(SimTest, GemmFindemaxCoversEveryRow) {
  memset("weight_shape", 0, 1, 1, 1);
  memset("fmap_shape", 0, 3, 0, 0);
  put(0x10, {2});
  put(0x11, {-9});
  put(0x12, {4});
  push(weightRecord({{-1}}, false));
  ok("gemm dest_reg=0x20 src_addr=0x10 flags=findemax size_ptr_addr=0 "
     "shape_ptr_addr=0");
  EXPECT_EQ(sim.emax(), 9.0f);
}

TEST_F(HwSimTest, FindemaxSeesStoredValues) {
  memset("weight_shape", 0, 1, 2, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x10, {256, 1.5f});
  push(weightRecord({{1, 1}}, false));
  ok("gemv dest_reg=0x20 src_addr=0x10 flags=findemax size_ptr_addr=0 "
     "shape_ptr_addr=0");
  EXPECT_EQ(sim.emax(), 258.0f);
}

//===----------------------------------------------------------------------===//
// CVO
//===----------------------------------------------------------------------===//

TEST_F(SimTest, CvoExp) {
  put(0x10, {0, 1, -1, 2});
  ok("cvo cvo_func=exp src_addr=0x10 dst_addr=0x20 length=4");
  std::vector<float> y = get(0x20, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 2.718281828459045f);
  EXPECT_FLOAT_EQ(y[2], 0.36787944117144233f);
  EXPECT_FLOAT_EQ(y[3], 7.38905609893065f);
  EXPECT_EQ(sim.stats().sfuElements, 4u);
}

TEST_F(SimTest, CvoSqrt) {
  put(0x10, {4, 2, 0.25f, 0, -1});
  ok("cvo cvo_func=sqrt src_addr=0x10 dst_addr=0x20 length=5");
  std::vector<float> y = get(0x20, 5);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_FLOAT_EQ(y[1], 1.4142135623730951f);
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[3], 0.0f);
  // The canonical NaN, not the CPU's (x86-64 makes 0xFFC00000).
  EXPECT_EQ(hw::floatBits(y[4]), 0x7fc00000u);
}

TEST_F(SimTest, CvoGeluTanhApproximation) {
  put(0x10, {0, 1, -1, 2, -3, 0.5f});
  ok("cvo cvo_func=gelu src_addr=0x10 dst_addr=0x20 length=6");
  std::vector<float> y = get(0x20, 6);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 0.8411919906082768f);
  EXPECT_FLOAT_EQ(y[2], -0.15880800939172324f);
  EXPECT_FLOAT_EQ(y[3], 1.954597694087775f);
  EXPECT_FLOAT_EQ(y[4], -0.0036373920817729943f);
  EXPECT_FLOAT_EQ(y[5], 0.34571400982514394f);
}

TEST_F(SimTest, CvoSinCos) {
  put(0x10, {0, 1, -0.5f, 1.5707963267948966f});
  ok("cvo cvo_func=sin src_addr=0x10 dst_addr=0x20 length=4");
  ok("cvo cvo_func=cos src_addr=0x10 dst_addr=0x30 length=4");
  std::vector<float> s = get(0x20, 4), c = get(0x30, 4);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_FLOAT_EQ(s[1], 0.8414709848078965f);
  EXPECT_FLOAT_EQ(s[2], -0.479425538604203f);
  EXPECT_FLOAT_EQ(s[3], 1.0f);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_FLOAT_EQ(c[1], 0.5403023058681398f);
  EXPECT_FLOAT_EQ(c[2], 0.8775825618903728f);
  EXPECT_NEAR(c[3], 0.0f, 1e-7);
}

// The SFU's exp, gelu, sin and cos over every BF16 input, in hardware
// numerics, pinned by a checksum (FNV-1a over the stored bits): the
// functions are the project's own (hw/numerics/Elementary.h), so every
// platform must store exactly these values.
TEST_F(HwSimTest, SfuOverEveryBf16InputGivesThePinnedBits) {
  const uint32_t lanes = machine::kLanesPerWord, half = 32768;
  std::vector<float> in(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits)
    in[bits] = hw::bf16ToFloat(uint16_t(bits));
  put(0x100, in);
  const uint32_t src = 0x100, dst = src + 65536 / lanes;
  const std::pair<const char *, uint64_t> pinned[] = {
      {"exp", 0x38dbfe76df5f63d5ull},
      {"gelu", 0x3493bdbd9d5c2a64ull},
      {"sin", 0x487f393a7279ca55ull},
      {"cos", 0x9398fc771c83e281ull}};
  for (const auto &[func, want] : pinned) {
    for (uint32_t part = 0; part < 2; ++part)
      ok("cvo cvo_func=" + std::string(func) +
         " src_addr=" + std::to_string(src + part * half / lanes) +
         " dst_addr=" + std::to_string(dst + part * half / lanes) +
         " length=" + std::to_string(half));
    uint64_t checksum = 0xcbf29ce484222325ull;
    for (float v : get(dst, 65536)) {
      const uint32_t bits = hw::floatBits(v);
      for (int b = 0; b < 4; ++b) {
        checksum ^= (bits >> (8 * b)) & 0xffu;
        checksum *= 0x100000001b3ull;
      }
    }
    EXPECT_EQ(checksum, want) << func << ": 0x" << std::hex << checksum;
  }
}

TEST_F(SimTest, CvoRecip) {
  put(0x10, {2, -4, 0.5f, 3, 0});
  ok("cvo cvo_func=recip src_addr=0x10 dst_addr=0x20 length=5");
  std::vector<float> y = get(0x20, 5);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[1], -0.25f);
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(y[3], 1.0f / 3.0f);
  EXPECT_EQ(y[4], kInf);
}

TEST_F(SimTest, CvoReduceSumWritesOneLaneAndTheScalar) {
  put(0x10, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  put(0x20, {-1, -2, -3, -4, -5, -6, -7, -8});
  EXPECT_FALSE(sim.scalarValid());
  ok("cvo cvo_func=reduce_sum src_addr=0x10 dst_addr=0x20 length=10");
  EXPECT_EQ(get(0x20, 8), (std::vector<float>{55, -2, -3, -4, -5, -6, -7, -8}));
  EXPECT_TRUE(sim.scalarValid());
  EXPECT_EQ(sim.scalar(), 55.0f);
  // accm adds to the destination lane; the scalar is the sum itself.
  put(0x30, {5});
  ok("cvo cvo_func=reduce_sum src_addr=0x10 dst_addr=0x30 length=3 "
     "flags=accm");
  EXPECT_EQ(at(0x30), 11.0f);
  EXPECT_EQ(sim.scalar(), 6.0f);
}

TEST_F(SimTest, CvoReduceSumIsSequentialFp32) {
  // 2^24 + 1 + 1 summed left to right in fp32 stays 2^24 (each +1 ties
  // back to the even neighbour); any other order could give 2^24 + 2.
  put(0x10, {16777216.0f, 1.0f, 1.0f});
  ok("cvo cvo_func=reduce_sum src_addr=0x10 dst_addr=0x20 length=3");
  EXPECT_EQ(at(0x20), 16777216.0f);
  put(0x30, {1.0f, 1.0f, 16777216.0f});
  ok("cvo cvo_func=reduce_sum src_addr=0x30 dst_addr=0x40 length=3");
  EXPECT_EQ(at(0x40), 16777218.0f);
}

TEST_F(SimTest, CvoScaleAndRecipScale) {
  setScalar(4.0f);
  put(0x10, {1, 2, -3});
  ok("cvo cvo_func=scale src_addr=0x10 dst_addr=0x20 length=3");
  EXPECT_EQ(get(0x20, 3), (std::vector<float>{4, 8, -12}));
  ok("cvo cvo_func=scale src_addr=0x10 dst_addr=0x30 length=3 "
     "flags=recip_scale");
  EXPECT_EQ(get(0x30, 3), (std::vector<float>{0.25f, 0.5f, -0.75f}));
  // A zero scalar: recip_scale gives 0 (gemma3n_execution.rst §5).
  setScalar(0.0f);
  ok("cvo cvo_func=scale src_addr=0x10 dst_addr=0x40 length=3 "
     "flags=recip_scale");
  EXPECT_EQ(get(0x40, 3), (std::vector<float>{0, 0, 0}));
  ok("cvo cvo_func=scale src_addr=0x10 dst_addr=0x50 length=3");
  EXPECT_EQ(get(0x50, 3), (std::vector<float>{0, 0, 0}));
}

TEST_F(SimTest, CvoAccumulatesAndWorksInPlace) {
  put(0x10, {0, 0, 1});
  put(0x20, {1, 1, 1});
  ok("cvo cvo_func=exp src_addr=0x10 dst_addr=0x20 length=2 flags=accm");
  EXPECT_EQ(get(0x20, 3), (std::vector<float>{2, 2, 1}));
  setScalar(2.0f);
  put(0x30, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ok("cvo cvo_func=scale src_addr=0x30 dst_addr=0x30 length=9 flags=accm");
  EXPECT_EQ(get(0x30, 9),
            (std::vector<float>{3, 6, 9, 12, 15, 18, 21, 24, 27}));
}

TEST_F(SimTest, CvoOverlappingSourceAndDestination) {
  // dst one word above src: every result comes from the original inputs.
  put(0x10, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  setScalar(10.0f);
  ok("cvo cvo_func=scale src_addr=0x10 dst_addr=0x11 length=16");
  EXPECT_EQ(get(0x10, 24),
            (std::vector<float>{1,  2,   3,   4,   5,   6,   7,   8,
                                10, 20,  30,  40,  50,  60,  70,  80,
                                90, 100, 110, 120, 130, 140, 150, 160}));
}

TEST_F(SimTest, CvoSubEmaxAppliesBeforeTheFunction) {
  armEmax(3.0f);
  put(0x10, {5, 7});
  ok("cvo cvo_func=sqrt src_addr=0x10 dst_addr=0x20 length=2 flags=sub_emax");
  EXPECT_EQ(get(0x20, 2), (std::vector<float>{std::sqrt(2.0f), 2.0f}));
  ok("cvo cvo_func=reduce_sum src_addr=0x10 dst_addr=0x30 length=2 "
     "flags=sub_emax");
  EXPECT_EQ(at(0x30), 6.0f);
}

TEST_F(SimTest, CvoLengthZeroIsANoOp) {
  put(0x10, {5});
  ok("cvo cvo_func=scale src_addr=0x1ffff dst_addr=0x1ffff length=0 "
     "flags=sub_emax");
  EXPECT_EQ(at(0x10), 5.0f);
  EXPECT_FALSE(sim.emaxArmed());
  EXPECT_EQ(sim.stats().sfuElements, 0u);
}

TEST_F(HwSimTest, CvoRoundsResultsToBf16) {
  put(0x10, {1});
  ok("cvo cvo_func=exp src_addr=0x10 dst_addr=0x20 length=1");
  EXPECT_EQ(at(0x20), 2.71875f); // e rounded to bf16
  // REDUCE_SUM adds in fp32 and rounds the stored sum; the scalar stays fp32.
  put(0x30, {1.0f, 0.00390625f, 0.001953125f});
  ok("cvo cvo_func=reduce_sum src_addr=0x30 dst_addr=0x40 length=3");
  EXPECT_EQ(at(0x40), 1.0078125f);
  EXPECT_EQ(sim.scalar(), 1.005859375f);
  put(0x50, {2});
  ok("cvo cvo_func=scale src_addr=0x50 dst_addr=0x60 length=1");
  EXPECT_EQ(at(0x60), 2.015625f); // 2 * 1.005859375 = 2.01171875 rounds up
}

//===----------------------------------------------------------------------===//
// MEMCPY
//===----------------------------------------------------------------------===//

TEST_F(SimTest, MemcpyHostToL2AndBack) {
  float *host = sim.hostLanes();
  for (int i = 0; i < 16; ++i)
    host[5 * 8 + i] = float(i) + 0.5f;
  memset("fmap_shape", 1, 2, 0, 0);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x40 aux_addr=5 "
     "shape_ptr_addr=1");
  std::vector<float> l2 = get(0x40, 16);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(l2[i], float(i) + 0.5f);
  ok("memcpy from_device=0 to_device=1 src_addr=0x40 aux_addr=100 "
     "shape_ptr_addr=1");
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(host[100 * 8 + i], float(i) + 0.5f);
  EXPECT_EQ(host[102 * 8], 0.0f);
  EXPECT_EQ(sim.stats().memcpyWords, 4u);
}

TEST_F(SimTest, MemcpyTwoDimensionalRows) {
  // 2 words per row, 3 rows, host rows 5 words apart; L2 rows contiguous.
  float *host = sim.hostLanes();
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 16; ++i)
      host[(10 + 5 * r) * 8 + i] = float(100 * r + i);
  memset("fmap_shape", 2, 2, 3, 5);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x80 aux_addr=10 "
     "shape_ptr_addr=2");
  for (int r = 0; r < 3; ++r) {
    std::vector<float> row = get(0x80 + 2 * r, 16);
    EXPECT_EQ(row[0], float(100 * r));
    EXPECT_EQ(row[15], float(100 * r + 15));
  }
  ok("memcpy from_device=0 to_device=1 src_addr=0x80 aux_addr=200 "
     "shape_ptr_addr=2");
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(host[(200 + 5 * r) * 8 + 3], float(100 * r + 3));
    EXPECT_EQ(host[(200 + 5 * r) * 8 + 15], float(100 * r + 15));
  }
  EXPECT_EQ(host[202 * 8], 0.0f); // the gap between host rows is untouched
  EXPECT_EQ(host[204 * 8 + 7], 0.0f);
}

TEST_F(BigHostSimTest, MemcpyHostWindow) {
  float *host = sim.hostLanes();
  host[1003 * 8 + 2] = 42.0f;
  ASSERT_TRUE(sim.setHostWindow(1000, &err)) << err;
  EXPECT_EQ(sim.hostWindow(), 1000u);
  memset("fmap_shape", 0, 1, 0, 0);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x10 aux_addr=3 "
     "shape_ptr_addr=0");
  EXPECT_EQ(at(0x10, 2), 42.0f);
  put(0x11, {7});
  ok("memcpy from_device=0 to_device=1 src_addr=0x11 aux_addr=0x1ffff "
     "shape_ptr_addr=0");
  EXPECT_EQ(host[(1000 + 0x1ffff) * 8], 7.0f);
  EXPECT_FALSE(sim.setHostWindow(sim.hostWords(), &err));
  EXPECT_NE(err.find("outside host memory"), std::string::npos) << err;
}

TEST_F(SimTest, MemcpyWithinL2IsAMemmove) {
  put(10, {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3});
  memset("fmap_shape", 0, 3, 0, 0);
  ok("memcpy from_device=0 to_device=0 dest_addr=11 src_addr=10 "
     "shape_ptr_addr=0");
  EXPECT_EQ(at(11), 1.0f);
  EXPECT_EQ(at(12), 2.0f);
  EXPECT_EQ(at(13), 3.0f);
  EXPECT_EQ(at(10), 1.0f); // the source's first word is not overwritten
  // rows x words: 2 rows of 1 word copy 2 words.
  memset("fmap_shape", 1, 1, 2, 9);
  ok("memcpy from_device=0 to_device=0 dest_addr=20 src_addr=11 "
     "shape_ptr_addr=1");
  EXPECT_EQ(at(20), 1.0f);
  EXPECT_EQ(at(21), 2.0f);
  EXPECT_EQ(at(22), 0.0f);
}

TEST_F(SimTest, AsyncIsCountedUntilSync) {
  memset("fmap_shape", 0, 1, 0, 0);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x10 aux_addr=0 "
     "shape_ptr_addr=0 async=1");
  ok("memcpy from_device=1 to_device=0 dest_addr=0x10 aux_addr=0 "
     "shape_ptr_addr=0");
  ok("cvo cvo_func=exp src_addr=0x10 dst_addr=0x10 length=8 async=1");
  EXPECT_EQ(sim.outstandingAsync(), 2u);
  EXPECT_EQ(get(0x10, 8), std::vector<float>(8, 1.0f)); // already complete
  sim.sync();
  EXPECT_EQ(sim.outstandingAsync(), 0u);
}

TEST_F(HwSimTest, MemcpyHostToL2Rounds) {
  float *host = sim.hostLanes();
  host[0] = 1.01171875f;
  host[1] = 3.0f;
  memset("fmap_shape", 0, 1, 0, 0);
  ok("memcpy from_device=1 to_device=0 dest_addr=0x10 aux_addr=0 "
     "shape_ptr_addr=0");
  EXPECT_EQ(at(0x10, 0), 1.015625f);
  EXPECT_EQ(at(0x10, 1), 3.0f);
  ok("memcpy from_device=0 to_device=1 src_addr=0x10 aux_addr=8 "
     "shape_ptr_addr=0");
  EXPECT_EQ(host[8 * 8], 1.015625f);
}

//===----------------------------------------------------------------------===//
// Traps
//===----------------------------------------------------------------------===//

TEST_F(SimTest, TrapUnwrittenConstantEntry) {
  memset("fmap_shape", 0, 1, 0, 0);
  push(weightRecord({{1}}, false));
  expectTrap("gemv dest_reg=0x00020 src_addr=0x00010 flags=0 size_ptr_addr=0 "
             "shape_ptr_addr=5 parallel_lane=0",
             "weight_shape entry 5 was never written");
  EXPECT_NE(err.find("instruction 1 (gemv dest_reg=0x00020 src_addr=0x00010 "
                     "flags=0 size_ptr_addr=0 shape_ptr_addr=5"),
            std::string::npos)
      << err;
  memset("weight_shape", 5, 1, 1, 1);
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=9 "
             "shape_ptr_addr=5",
             "fmap_shape entry 9 was never written");
  expectTrap("memcpy from_device=1 dest_addr=0x10 shape_ptr_addr=33",
             "fmap_shape entry 33 was never written");
  EXPECT_EQ(sim.weightStreamPending(), 16u); // nothing was consumed
}

TEST_F(SimTest, TrapL2OutOfRange) {
  memset("weight_shape", 0, 9, 1, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  push(weightRecord({{1}, {1}, {1}, {1}, {1}, {1}, {1}, {1}, {1}}, false));
  // Nine outputs need two words: 0x1bfff exists, 0x1c000 does not.
  expectTrap("gemv dest_reg=0x1bfff src_addr=0x10 size_ptr_addr=0 "
             "shape_ptr_addr=0",
             "L2 word 0x1c000 does not exist");
  expectTrap("gemv dest_reg=0x10 src_addr=0x1ffff size_ptr_addr=0 "
             "shape_ptr_addr=0",
             "L2 word 0x1ffff does not exist");
  EXPECT_EQ(sim.weightStreamPending(), 9u * 16u);
  expectTrap("cvo cvo_func=exp src_addr=0x1c000 dst_addr=0x10 length=1",
             "L2 word 0x1c000 does not exist");
  expectTrap("cvo cvo_func=exp src_addr=0x10 dst_addr=0x1bfff length=9",
             "L2 word 0x1c000 does not exist");
  memset("fmap_shape", 1, 2, 0, 0);
  expectTrap("memcpy from_device=1 dest_addr=0x1bfff shape_ptr_addr=1",
             "L2 word 0x1c000 does not exist");
  expectTrap("memcpy dest_addr=0x10 src_addr=0x1bfff shape_ptr_addr=1",
             "L2 word 0x1c000 does not exist");
}

TEST_F(SimTest, TrapHostOutsideWindow) {
  memset("fmap_shape", 0, 2, 0, 0);
  expectTrap("memcpy from_device=1 dest_addr=0x10 aux_addr=0x1ffff "
             "shape_ptr_addr=0",
             "leave the 131072-word host window");
  memset("fmap_shape", 1, 1, 3, 0x8000);
  expectTrap("memcpy to_device=1 src_addr=0x10 aux_addr=0x10000 "
             "shape_ptr_addr=1",
             "host window");
  ok("memcpy to_device=1 src_addr=0x10 aux_addr=0x1fffe shape_ptr_addr=0");
}

TEST_F(SmallHostSimTest, TrapHostOutsideHostMemory) {
  memset("fmap_shape", 0, 8, 0, 0);
  ok("memcpy from_device=1 dest_addr=0x10 aux_addr=56 shape_ptr_addr=0");
  expectTrap("memcpy from_device=1 dest_addr=0x10 aux_addr=57 "
             "shape_ptr_addr=0",
             "outside host memory (64 words)");
  ASSERT_TRUE(sim.setHostWindow(60, &err)) << err;
  expectTrap("memcpy to_device=1 src_addr=0x10 aux_addr=0 shape_ptr_addr=0",
             "outside host memory");
}

TEST_F(SimTest, TrapWeightStreamUnderRun) {
  memset("weight_shape", 0, 1, 4, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  put(0x20, {3});
  push(std::vector<uint8_t>(10, 1));
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 "
             "shape_ptr_addr=0",
             "weight stream exhausted: gemv needs 16 bytes, 10 pending");
  EXPECT_EQ(sim.weightStreamPending(), 10u);
  EXPECT_EQ(at(0x20), 3.0f);
  expectTrap("gemm dest_reg=0x20 src_addr=0x10 flags=w_scale "
             "size_ptr_addr=0 shape_ptr_addr=0",
             "weight stream exhausted: gemm needs 32 bytes, 10 pending");
}

TEST_F(SimTest, TrapWeightStreamOverSupply) {
  memset("weight_shape", 0, 1, 4, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  push(std::vector<uint8_t>(16 + 5, 1));
  ok("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 shape_ptr_addr=0");
  EXPECT_FALSE(sim.finishSegment(&err));
  EXPECT_NE(err.find("weight stream has 5 unconsumed bytes"), std::string::npos)
      << err;
}

TEST_F(SimTest, TrapBadParallelLane) {
  memset("weight_shape", 0, 1, 1, 1);
  memset("fmap_shape", 0, 1, 0, 0);
  push(weightRecord({{1}}, false));
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 "
             "shape_ptr_addr=0 parallel_lane=5",
             "parallel_lane 5 exceeds the 4 GEMV cores");
  expectTrap("gemm dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 "
             "shape_ptr_addr=0 parallel_lane=31",
             "parallel_lane 31");
  EXPECT_EQ(sim.weightStreamPending(), 16u);
}

TEST_F(SimTest, TrapBadShapes) {
  memset("weight_shape", 0, 1, 1, 1);
  memset("fmap_shape", 0, 2, 0, 0);
  push(weightRecord({{1}}, false));
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=0 "
             "shape_ptr_addr=0",
             "gemv needs M = 1 but fmap_shape entry 0 has a = 2");
  memset("fmap_shape", 1, 0, 0, 0);
  expectTrap("gemm dest_reg=0x20 src_addr=0x10 size_ptr_addr=1 "
             "shape_ptr_addr=0",
             "a = M = 0");
  memset("fmap_shape", 1, 1, 0, 0);
  memset("weight_shape", 1, 1, 1, 2);
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=1 "
             "shape_ptr_addr=1",
             "c = 2 is not a defined weight format");
  memset("weight_shape", 2, 0, 1, 0);
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=1 "
             "shape_ptr_addr=2",
             "weight_shape entry 2 has a = 0");
  memset("weight_shape", 3, 1, 0, 0);
  expectTrap("gemv dest_reg=0x20 src_addr=0x10 size_ptr_addr=1 "
             "shape_ptr_addr=3",
             "weight_shape entry 3 has b = 0");
  // GEMM rows must not overlap: 9 outputs need 2 words per row.
  memset("weight_shape", 4, 9, 1, 1);
  memset("fmap_shape", 2, 2, 0, 1);
  expectTrap("gemm dest_reg=0x20 src_addr=0x10 size_ptr_addr=2 "
             "shape_ptr_addr=4",
             "destination row stride 1 words is less than a row");
  memset("weight_shape", 5, 1, 9, 1);
  memset("fmap_shape", 3, 2, 1, 0);
  expectTrap("gemm dest_reg=0x20 src_addr=0x10 size_ptr_addr=3 "
             "shape_ptr_addr=5",
             "source row stride 1 words is less than a row");
  memset("fmap_shape", 4, 0, 0, 0);
  expectTrap("memcpy from_device=1 dest_addr=0x10 shape_ptr_addr=4",
             "a = 0 words per row");
  EXPECT_EQ(sim.weightStreamPending(), 16u);
}

TEST_F(SimTest, TrapRecipScaleOutsideScale) {
  setScalar(2.0f);
  expectTrap("cvo cvo_func=exp src_addr=0x10 dst_addr=0x20 length=1 "
             "flags=recip_scale",
             "recip_scale applies only to scale, not to exp");
  expectTrap("cvo cvo_func=recip src_addr=0x10 dst_addr=0x20 length=0 "
             "flags=recip_scale",
             "not to recip");
}

TEST_F(SimTest, TrapSubEmaxUnarmed) {
  put(0x20, {4});
  expectTrap("cvo cvo_func=exp src_addr=0x10 dst_addr=0x20 length=1 "
             "flags=sub_emax",
             "sub_emax but no findemax GEMV/GEMM has set e_max");
  EXPECT_EQ(at(0x20), 4.0f);
}

TEST_F(SimTest, TrapScaleWithoutScalar) {
  expectTrap("cvo cvo_func=scale src_addr=0x10 dst_addr=0x20 length=1",
             "no reduce_sum has set");
}

TEST_F(SimTest, TrapHostToHostMemcpy) {
  memset("fmap_shape", 0, 1, 0, 0);
  expectTrap("memcpy from_device=1 to_device=1 dest_addr=0x10 src_addr=0x10 "
             "shape_ptr_addr=0",
             "host-to-host MEMCPY is not supported");
}

TEST_F(SimTest, TrapDecodeErrorInRun) {
  std::vector<uint64_t> words = {
      encodeText("memset dest_cache=fmap_shape dest_addr=3 a_value=1"),
      uint64_t(0x5) << isa::kOpcodeLo,
      encodeText("memset dest_cache=fmap_shape dest_addr=4 a_value=1"),
  };
  EXPECT_FALSE(sim.run(words.data(), words.size(), &err));
  EXPECT_EQ(err, "instruction 1 (undecodable): word 0x5000000000000000: "
                 "opcode 0x5 is reserved");
  uint16_t abc[3];
  EXPECT_TRUE(sim.constEntry(0, 3, abc));  // ran before the trap
  EXPECT_FALSE(sim.constEntry(0, 4, abc)); // never reached
}

TEST_F(SimTest, TrapIndexCountsWithinTheRun) {
  std::vector<uint64_t> words = {
      encodeText("memset dest_cache=fmap_shape dest_addr=0 a_value=1"),
      encodeText("memset dest_cache=fmap_shape dest_addr=1 a_value=1"),
      encodeText("cvo cvo_func=exp src_addr=0x1fff0 dst_addr=0x10 length=4"),
  };
  EXPECT_FALSE(sim.run(words.data(), words.size(), &err));
  EXPECT_EQ(err.rfind("instruction 2 (cvo cvo_func=exp src_addr=0x1fff0", 0),
            0u)
      << err;
}

TEST_F(SimTest, ExecuteChecksFieldsOfUndecodedInstructions) {
  isa::Instruction inst(isa::Opcode::Cvo);
  inst.set(isa::Field::Cvo_cvo_func, 9).set(isa::Field::Cvo_length, 1);
  EXPECT_FALSE(sim.execute(inst, &err));
  EXPECT_NE(err.find("field 'cvo_func' value 9 is undefined"),
            std::string::npos)
      << err;
  EXPECT_EQ(sim.stats().instructions, 0u);
}

} // namespace
