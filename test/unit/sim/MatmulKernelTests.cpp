//===- MatmulKernelTests.cpp - GEMV/GEMM kernels agree bit for bit --------===//
//
// The portable and the AVX2 kernel, any split of the features and any
// thread count must give the same bits as the summation order of
// docs/isa-semantics.md §2, which this file re-implements directly on the
// record bytes (natural element order, no shared code with the kernels).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulKernels.h"
#include "runtime/sim/Simulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace pccx;
using sim::MatmulIsa;

namespace {

struct Case {
  size_t m, n, k;
  bool int4, wScale;
  std::vector<uint8_t> record; ///< scales (if any), then padded rows
  std::vector<float> x;        ///< m rows of k activations
  size_t rowStride() const { return ((int4 ? (k + 1) / 2 : k) + 15) / 16 * 16; }
  size_t scaleBytes() const { return wScale ? (4 * n + 15) / 16 * 16 : 0; }
};

Case randomCase(std::mt19937 &rng, size_t m, size_t n, size_t k, bool int4,
                bool wScale) {
  Case c{m, n, k, int4, wScale, {}, {}};
  c.record.resize(c.scaleBytes() + n * c.rowStride());
  // Every byte random, padding included: padding codes must not matter.
  for (uint8_t &b : c.record)
    b = uint8_t(rng());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < n && wScale; ++i) {
    float s = std::fabs(normal(rng)) * 0.01f;
    std::memcpy(&c.record[4 * i], &s, 4);
  }
  // Wide magnitudes and full fp32 mantissas, so any change of rounding or
  // order shows in the bits.
  c.x.resize(m * k);
  for (float &v : c.x)
    v = normal(rng) * (rng() % 4 == 0 ? 1000.0f : 1.0f);
  return c;
}

int weightAt(const Case &c, size_t row, size_t e) {
  const uint8_t *p = c.record.data() + c.scaleBytes() + row * c.rowStride();
  if (!c.int4)
    return int8_t(p[e]);
  uint8_t byte = p[e / 2];
  return e % 2 ? int8_t(byte) >> 4 : int8_t(uint8_t(byte << 4)) >> 4;
}

/// The documented order: partial j of every 32-element block takes element
/// 32b + j (INT8) or, for INT4, the low nibble of byte j (j < 16) and the
/// high nibble of byte j - 16; partials combine as j += j + 16, j + 8, ...
std::vector<float> documentedOrder(const Case &c) {
  std::vector<float> out(c.m * c.n);
  for (size_t r = 0; r < c.m; ++r)
    for (size_t row = 0; row < c.n; ++row) {
      float acc[32] = {};
      for (size_t base = 0; base < c.k; base += 32)
        for (size_t j = 0; j < 32; ++j) {
          size_t e =
              c.int4 ? base + (j < 16 ? 2 * j : 2 * (j - 16) + 1) : base + j;
          if (e < c.k) {
            float product = float(weightAt(c, row, e)) * c.x[r * c.k + e];
            acc[j] += product;
          }
        }
      for (size_t half = 16; half > 0; half /= 2)
        for (size_t j = 0; j < half; ++j)
          acc[j] += acc[j + half];
      float scale = 1.0f;
      if (c.wScale)
        std::memcpy(&scale, &c.record[4 * row], 4);
      out[r * c.n + row] = c.wScale ? scale * acc[0] : acc[0];
    }
  return out;
}

/// Runs the kernel over the features in `pieces` contiguous ranges.
std::vector<float> runKernel(const Case &c, MatmulIsa isa, size_t pieces) {
  size_t kPadded = (c.k + 31) / 32 * 32;
  std::vector<float> in(c.m * kPadded, 0.0f), natural(kPadded);
  for (size_t r = 0; r < c.m; ++r) {
    std::fill(natural.begin(), natural.end(), 0.0f);
    std::copy_n(&c.x[r * c.k], c.k, natural.begin());
    if (c.int4)
      sim::permuteInt4Activations(natural.data(), &in[r * kPadded], kPadded);
    else
      std::copy(natural.begin(), natural.end(), in.begin() + r * kPadded);
  }
  std::vector<float> scales(c.n), out(c.m * c.n, -1.0f);
  for (size_t i = 0; i < c.n && c.wScale; ++i)
    std::memcpy(&scales[i], &c.record[4 * i], 4);
  sim::MatmulJob job{c.record.data() + c.scaleBytes(),
                     c.rowStride(),
                     c.int4,
                     kPadded,
                     c.m,
                     c.n,
                     in.data(),
                     c.wScale ? scales.data() : nullptr,
                     out.data()};
  size_t chunk = (c.n + pieces - 1) / pieces;
  for (size_t n0 = 0; n0 < c.n; n0 += chunk)
    sim::matmulFeatures(job, n0, std::min(c.n, n0 + chunk), isa);
  return out;
}

::testing::AssertionResult sameBits(const std::vector<float> &a,
                                    const std::vector<float> &b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

std::string describe(const Case &c) {
  return std::string(c.int4 ? "int4" : "int8") + " M=" + std::to_string(c.m) +
         " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) +
         (c.wScale ? " w_scale" : "");
}

std::vector<MatmulIsa> availableIsas() {
  std::vector<MatmulIsa> isas;
  for (MatmulIsa isa : {MatmulIsa::Scalar, MatmulIsa::Avx2,
                        MatmulIsa::Avx512, MatmulIsa::Neon})
    if (sim::matmulIsaAvailable(isa))
      isas.push_back(isa);
  return isas;
}

TEST(MatmulKernels, EveryKernelFollowsTheDocumentedOrder) {
  std::mt19937 rng(2024);
  for (bool int4 : {true, false})
    for (bool wScale : {false, true})
      for (size_t k : {1, 7, 16, 31, 33, 48, 95, 257, 1001})
        for (size_t n : {1, 3, 17, 64})
          for (size_t m : {1, 2, 5}) {
            Case c = randomCase(rng, m, n, k, int4, wScale);
            std::vector<float> expected = documentedOrder(c);
            for (MatmulIsa isa : availableIsas())
              for (size_t pieces : {1, 3})
                EXPECT_TRUE(sameBits(expected, runKernel(c, isa, pieces)))
                    << describe(c) << ", " << sim::matmulIsaName(isa) << ", "
                    << pieces << " pieces";
          }
}

TEST(MatmulKernels, ScalarIsAlwaysAvailable) {
  EXPECT_TRUE(sim::matmulIsaAvailable(MatmulIsa::Scalar));
  EXPECT_TRUE(sim::matmulIsaAvailable(sim::bestMatmulIsa()));
}

// The board's cores always have NEON: the portable kernel is never what
// an aarch64 build runs.
TEST(MatmulKernels, Aarch64RunsNeon) {
#if defined(__aarch64__)
  EXPECT_EQ(sim::bestMatmulIsa(), MatmulIsa::Neon);
#else
  EXPECT_FALSE(sim::matmulIsaAvailable(MatmulIsa::Neon));
#endif
}

/// Through the simulator: record decode, accm and both numerics; every
/// kernel and thread count stores the same bits.
TEST(MatmulKernels, SimulatorResultsIndependentOfKernelAndThreads) {
  std::mt19937 rng(99);
  const struct {
    size_t m, n, k;
  } shapes[] = {{1, 1000, 999}, {1, 2048, 512}, {3, 700, 401}, {16, 260, 97}};
  for (auto numerics : {sim::Numerics::Reference, sim::Numerics::Hardware})
    for (bool int4 : {true, false})
      for (bool wScale : {false, true})
        for (auto shape : shapes) {
          Case c = randomCase(rng, shape.m, shape.n, shape.k, int4, wScale);
          size_t inWords = (c.k + 7) / 8, outWords = (c.n + 7) / 8;
          std::vector<float> first;
          for (MatmulIsa isa : availableIsas())
            for (unsigned threads : {1u, 2u}) {
              sim::Simulator s(numerics);
              s.setThreads(threads);
              ASSERT_TRUE(s.setMatmulIsa(isa));
              std::string err, flags = wScale ? "w_scale|accm" : "accm";
              for (size_t r = 0; r < c.m; ++r)
                ASSERT_TRUE(
                    s.writeL2(uint32_t(r * inWords), &c.x[r * c.k], c.k, &err))
                    << err;
              std::vector<float> old(c.m * outWords * 8, 0.25f);
              ASSERT_TRUE(s.writeL2(0x10000, old.data(), old.size(), &err));
              isa::Instruction shapeEntry, sizeEntry, matmul;
              ASSERT_TRUE(isa::assemble(
                  "memset dest_cache=weight_shape dest_addr=1 a_value=" +
                      std::to_string(c.n) + " b_value=" + std::to_string(c.k) +
                      " c_value=" + (int4 ? "0" : "1"),
                  shapeEntry, &err));
              ASSERT_TRUE(isa::assemble(
                  "memset dest_cache=fmap_shape dest_addr=2 a_value=" +
                      std::to_string(c.m),
                  sizeEntry, &err));
              ASSERT_TRUE(isa::assemble(
                  std::string(c.m > 1 ? "gemm" : "gemv") +
                      " dest_reg=0x10000 src_addr=0 flags=" + flags +
                      " size_ptr_addr=2 shape_ptr_addr=1",
                  matmul, &err))
                  << err;
              s.pushWeightStream(c.record.data(), c.record.size());
              ASSERT_TRUE(s.execute(shapeEntry, &err) &&
                          s.execute(sizeEntry, &err) && s.execute(matmul, &err))
                  << err;
              std::vector<float> y(c.m * outWords * 8);
              ASSERT_TRUE(s.readL2(0x10000, y.data(), y.size(), &err));
              if (first.empty())
                first = y;
              else
                EXPECT_TRUE(sameBits(first, y))
                    << describe(c) << ", " << sim::matmulIsaName(isa) << ", "
                    << threads << " threads";
            }
        }
}

} // namespace
