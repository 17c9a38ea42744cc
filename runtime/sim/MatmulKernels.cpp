//===- MatmulKernels.cpp - GEMV/GEMM dot-product kernels ------------------===//
//
// The summation order is the one MatmulKernels.h describes. This file is
// built with -ffp-contract=off: a multiply and the add that follows stay two
// roundings in every kernel (an FMA would round once and change Reference
// numerics, whose fp32 activations make the products inexact).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulKernels.h"
#include "runtime/sim/EnumNames.h"

#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PCCX_SIM_HAVE_AVX2 1
#include <immintrin.h>
#endif
// Advanced SIMD is part of every aarch64 core (the KV260's Cortex-A53 too).
#if defined(__aarch64__) && defined(__ARM_NEON)
#define PCCX_SIM_HAVE_NEON 1
#include <arm_neon.h>
#endif

namespace pccx::sim {

namespace {

constexpr size_t kBlockBytes4 = kMatmulBlock / 2; // INT4 bytes per block

//===----------------------------------------------------------------------===//
// Portable kernel
//===----------------------------------------------------------------------===//

void unpackInt4Scalar(const uint8_t *row, float *w, size_t blocks) {
  for (size_t b = 0; b < blocks; ++b)
    for (size_t i = 0; i < kBlockBytes4; ++i) {
      uint8_t byte = row[kBlockBytes4 * b + i];
      w[kMatmulBlock * b + i] = float(int8_t(uint8_t(byte << 4)) >> 4);
      w[kMatmulBlock * b + kBlockBytes4 + i] = float(int8_t(byte) >> 4);
    }
}

float dotScalar(const float *w, const float *x, size_t n) {
  float acc[kMatmulBlock] = {};
  for (size_t k = 0; k < n; k += kMatmulBlock)
    for (size_t j = 0; j < kMatmulBlock; ++j)
      acc[j] += w[k + j] * x[k + j];
  for (size_t half = kMatmulBlock / 2; half > 0; half /= 2)
    for (size_t j = 0; j < half; ++j)
      acc[j] += acc[j + half];
  return acc[0];
}

void featuresScalar(const MatmulJob &job, size_t n0, size_t n1) {
  // Elements past the row's bytes (INT8 rows padded to 16, not 32) stay
  // zero and meet zero activations.
  std::vector<float> w(job.kPadded, 0.0f);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    if (job.int4)
      unpackInt4Scalar(row, w.data(), job.rowStride / kBlockBytes4);
    else
      for (size_t i = 0; i < job.rowStride; ++i)
        w[i] = float(int8_t(row[i]));
    for (size_t r = 0; r < job.m; ++r) {
      float sum = dotScalar(w.data(), job.in + r * job.kPadded, job.kPadded);
      job.out[r * job.n + n] = job.scales ? job.scales[n] * sum : sum;
    }
  }
}

//===----------------------------------------------------------------------===//
// AVX2 kernel: the 32 partial sums are four 8-lane registers (lanes 0-7,
// 8-15, 16-23, 24-31); codes are widened and converted in registers.
//===----------------------------------------------------------------------===//

#ifdef PCCX_SIM_HAVE_AVX2
#define PCCX_AVX2 __attribute__((target("avx2")))
#define PCCX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

/// How far ahead of the weight it decodes the GEMV asks for the next ones
/// (a prefetch past the record's end is harmless: it never faults).
constexpr size_t kPrefetchBytes = 2048;

/// The 32 weights of INT4 block `p` (16 bytes) in kernel order.
PCCX_AVX2_INLINE void decodeInt4(const uint8_t *p, __m256 w[4]) {
  // Two 8-byte loads that widen as they load (vpmovsxbd m64): no separate
  // load and byte shift.
  __m256i lo = _mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))); // bytes 0-7
  __m256i hi = _mm256_cvtepi8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p + 8))); // 8-15
  w[0] = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(lo, 28), 28));
  w[1] = _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(hi, 28), 28));
  w[2] = _mm256_cvtepi32_ps(_mm256_srai_epi32(lo, 4));
  w[3] = _mm256_cvtepi32_ps(_mm256_srai_epi32(hi, 4));
}

/// The 8 weights of INT8 bytes p[0..7].
PCCX_AVX2_INLINE __m256 decodeInt8x8(const uint8_t *p) {
  __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
}

PCCX_AVX2_INLINE void accumulate(__m256 acc[4], const __m256 w[4],
                                 const float *x) {
  for (int i = 0; i < 4; ++i)
    acc[i] =
        _mm256_add_ps(acc[i], _mm256_mul_ps(w[i], _mm256_loadu_ps(x + 8 * i)));
}

/// acc[j] += acc[j+16], += acc[j+8], ... down to lane 0, as dotScalar does.
PCCX_AVX2_INLINE float combine(const __m256 acc[4]) {
  __m256 a = _mm256_add_ps(acc[0], acc[2]);
  __m256 b = _mm256_add_ps(acc[1], acc[3]);
  a = _mm256_add_ps(a, b);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}

/// GEMV (one activation row): each weight row is decoded in registers and
/// consumed at once. A row of INT8 ends on a 16-byte boundary, so its last
/// block may hold 16 weights; the missing ones would be zeros meeting zero
/// activations, adding +0 to a partial sum, which changes nothing (a sum
/// that starts at +0 never becomes -0), so they are skipped.
PCCX_AVX2 float rowDotAvx2(const MatmulJob &job, const uint8_t *row,
                           const float *x) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 v[4];
  if (job.int4) {
    const size_t blocks = job.rowStride / kBlockBytes4;
    size_t b = 0;
    // Four blocks (a cache line of weights) per iteration: fewer loop
    // instructions beside the ~20 vector ones of a block. Weights stream
    // from DRAM through 4 KiB pages, where the hardware prefetcher stops:
    // each line is asked for 2 KiB ahead.
    for (; b + 4 <= blocks; b += 4) {
      _mm_prefetch(reinterpret_cast<const char *>(row) + kBlockBytes4 * b +
                       kPrefetchBytes,
                   _MM_HINT_T0);
      for (size_t u = b; u < b + 4; ++u) {
        decodeInt4(row + kBlockBytes4 * u, v);
        accumulate(acc, v, x + kMatmulBlock * u);
      }
    }
    for (; b < blocks; ++b) {
      decodeInt4(row + kBlockBytes4 * b, v);
      accumulate(acc, v, x + kMatmulBlock * b);
    }
    return combine(acc);
  }
  size_t full = job.rowStride / kMatmulBlock;
  for (size_t b = 0; b < full; ++b) {
    const uint8_t *p = row + kMatmulBlock * b;
    for (int i = 0; i < 4; ++i)
      v[i] = decodeInt8x8(p + 8 * i);
    accumulate(acc, v, x + kMatmulBlock * b);
  }
  if (job.rowStride % kMatmulBlock) {
    const uint8_t *p = row + kMatmulBlock * full;
    const float *xb = x + kMatmulBlock * full;
    for (int i = 0; i < 2; ++i)
      acc[i] =
          _mm256_add_ps(acc[i], _mm256_mul_ps(decodeInt8x8(p + 8 * i),
                                              _mm256_loadu_ps(xb + 8 * i)));
  }
  return combine(acc);
}

/// rowDotAvx2 for two activation rows at once: each block is decoded once
/// in registers for both, and their eight partial-sum registers are
/// independent chains, so the adds are not waiting on each other's latency.
/// Each row's sums take exactly rowDotAvx2's operations in its order.
PCCX_AVX2 void rowDot2Avx2(const MatmulJob &job, const uint8_t *row,
                           const float *x0, const float *x1, float sums[2]) {
  __m256 a0[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                  _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 a1[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                  _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 v[4];
  if (job.int4) {
    const size_t blocks = job.rowStride / kBlockBytes4;
    for (size_t b = 0; b < blocks; ++b) {
      decodeInt4(row + kBlockBytes4 * b, v);
      accumulate(a0, v, x0 + kMatmulBlock * b);
      accumulate(a1, v, x1 + kMatmulBlock * b);
    }
  } else {
    const size_t full = job.rowStride / kMatmulBlock;
    for (size_t b = 0; b < full; ++b) {
      const uint8_t *p = row + kMatmulBlock * b;
      for (int i = 0; i < 4; ++i)
        v[i] = decodeInt8x8(p + 8 * i);
      accumulate(a0, v, x0 + kMatmulBlock * b);
      accumulate(a1, v, x1 + kMatmulBlock * b);
    }
    if (job.rowStride % kMatmulBlock) {
      const uint8_t *p = row + kMatmulBlock * full;
      const size_t at = kMatmulBlock * full;
      for (int i = 0; i < 2; ++i) {
        const __m256 w = decodeInt8x8(p + 8 * i);
        a0[i] = _mm256_add_ps(
            a0[i], _mm256_mul_ps(w, _mm256_loadu_ps(x0 + at + 8 * i)));
        a1[i] = _mm256_add_ps(
            a1[i], _mm256_mul_ps(w, _mm256_loadu_ps(x1 + at + 8 * i)));
      }
    }
  }
  sums[0] = combine(a0);
  sums[1] = combine(a1);
}

PCCX_AVX2 void featuresAvx2(const MatmulJob &job, size_t n0, size_t n1) {
  if (job.m == 1) {
    for (size_t n = n0; n < n1; ++n) {
      float sum = rowDotAvx2(job, job.rows + n * job.rowStride, job.in);
      job.out[n] = job.scales ? job.scales[n] * sum : sum;
    }
    return;
  }
  // GEMM: activation rows two at a time over each weight row (which stays
  // in L1 between the pairs).
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    size_t r = 0;
    for (; r + 2 <= job.m; r += 2) {
      float sums[2];
      rowDot2Avx2(job, row, job.in + r * job.kPadded,
                  job.in + (r + 1) * job.kPadded, sums);
      for (size_t i = 0; i < 2; ++i)
        job.out[(r + i) * job.n + n] =
            job.scales ? job.scales[n] * sums[i] : sums[i];
    }
    if (r < job.m) {
      float sum = rowDotAvx2(job, row, job.in + r * job.kPadded);
      job.out[r * job.n + n] = job.scales ? job.scales[n] * sum : sum;
    }
  }
}
#endif // PCCX_SIM_HAVE_AVX2

#ifdef PCCX_SIM_HAVE_AVX2
//===----------------------------------------------------------------------===//
// AVX-512 kernel: the 32 partial sums are two 16-lane registers (lanes
// 0-15, 16-31), the AVX2 kernel's four registers side by side, combined as
// that kernel combines them. Up to four activation rows share each decoded
// block (32 registers hold their sums).
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics start from an undefined vector that its
// -Wmaybe-uninitialized reports (a known false positive of the headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define PCCX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define PCCX_AVX512_INLINE                                                     \
  __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline

/// The 32 weights of INT4 block `p` (16 bytes) in kernel order: the 16 low
/// nibbles, then the 16 high nibbles.
PCCX_AVX512_INLINE void decodeInt4x32(const uint8_t *p, __m512 w[2]) {
  __m512i codes = _mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  w[0] = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(codes, 28), 28));
  w[1] = _mm512_cvtepi32_ps(_mm512_srai_epi32(codes, 4));
}

/// The 16 weights of INT8 bytes p[0..15].
PCCX_AVX512_INLINE __m512 decodeInt8x16(const uint8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
}

/// combine() of the AVX2 kernel over the same 32 lanes.
PCCX_AVX512_INLINE float combine512(const __m512 acc[2]) {
  const __m256 a0 = _mm512_castps512_ps256(acc[0]),
               a1 = _mm256_castpd_ps(
                   _mm512_extractf64x4_pd(_mm512_castps_pd(acc[0]), 1)),
               a2 = _mm512_castps512_ps256(acc[1]),
               a3 = _mm256_castpd_ps(
                   _mm512_extractf64x4_pd(_mm512_castps_pd(acc[1]), 1));
  __m256 a = _mm256_add_ps(a0, a2);
  __m256 b = _mm256_add_ps(a1, a3);
  a = _mm256_add_ps(a, b);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}

/// acc += weights * x[0..15], two roundings.
PCCX_AVX512_INLINE void accumulate512(__m512 &acc, __m512 weights,
                                      const float *x) {
  acc = _mm512_add_ps(acc, _mm512_mul_ps(weights, _mm512_loadu_ps(x)));
}

/// R activation rows (1 to 4) times one weight row: each block decoded
/// once, each row's 32 sums taking the AVX2 kernel's operations in order.
template <int R>
PCCX_AVX512 void rowsDotAvx512(const MatmulJob &job, const uint8_t *row,
                               const float *const *x, float *sums) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  __m512 w[2];
  if (job.int4) {
    const size_t blocks = job.rowStride / kBlockBytes4;
    size_t b = 0;
    for (; b < blocks; ++b) {
      if (R == 1 && b % 4 == 0)
        _mm_prefetch(reinterpret_cast<const char *>(row) + kBlockBytes4 * b +
                         kPrefetchBytes,
                     _MM_HINT_T0);
      decodeInt4x32(row + kBlockBytes4 * b, w);
      for (int r = 0; r < R; ++r) {
        accumulate512(acc[r][0], w[0], x[r] + kMatmulBlock * b);
        accumulate512(acc[r][1], w[1], x[r] + kMatmulBlock * b + 16);
      }
    }
  } else {
    const size_t full = job.rowStride / kMatmulBlock;
    for (size_t b = 0; b < full; ++b) {
      const uint8_t *p = row + kMatmulBlock * b;
      w[0] = decodeInt8x16(p);
      w[1] = decodeInt8x16(p + 16);
      for (int r = 0; r < R; ++r) {
        accumulate512(acc[r][0], w[0], x[r] + kMatmulBlock * b);
        accumulate512(acc[r][1], w[1], x[r] + kMatmulBlock * b + 16);
      }
    }
    if (job.rowStride % kMatmulBlock) {
      // The half block: lanes 0-15 only, as the AVX2 kernel's acc[0..1].
      w[0] = decodeInt8x16(row + kMatmulBlock * full);
      for (int r = 0; r < R; ++r)
        accumulate512(acc[r][0], w[0], x[r] + kMatmulBlock * full);
    }
  }
  for (int r = 0; r < R; ++r)
    sums[r] = combine512(acc[r]);
}

PCCX_AVX512 void featuresAvx512(const MatmulJob &job, size_t n0, size_t n1) {
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    size_t r = 0;
    float sums[4];
    const float *x[4];
    // (Not a lambda: a lambda does not take this function's target.)
#define PCCX_STORE_SUMS(count)                                                 \
  for (size_t i = 0; i < size_t(count); ++i)                                   \
    job.out[(r + i) * job.n + n] = job.scales ? job.scales[n] * sums[i] : sums[i];
    for (; r + 4 <= job.m; r += 4) {
      for (int i = 0; i < 4; ++i)
        x[i] = job.in + (r + size_t(i)) * job.kPadded;
      rowsDotAvx512<4>(job, row, x, sums);
      PCCX_STORE_SUMS(4)
    }
    for (size_t i = 0; r + i < job.m; ++i)
      x[i] = job.in + (r + i) * job.kPadded;
    switch (job.m - r) {
    case 3:
      rowsDotAvx512<3>(job, row, x, sums);
      PCCX_STORE_SUMS(3)
      break;
    case 2:
      rowsDotAvx512<2>(job, row, x, sums);
      PCCX_STORE_SUMS(2)
      break;
    case 1:
      rowsDotAvx512<1>(job, row, x, sums);
      PCCX_STORE_SUMS(1)
      break;
    default:
      break;
    }
#undef PCCX_STORE_SUMS
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif // PCCX_SIM_HAVE_AVX2 (AVX-512)

//===----------------------------------------------------------------------===//
// NEON kernel (aarch64): the 32 partial sums are eight 4-lane registers;
// codes are widened and converted in registers. Multiplies and adds stay
// separate instructions (no FMLA), as -ffp-contract=off keeps them.
//===----------------------------------------------------------------------===//

#ifdef PCCX_SIM_HAVE_NEON

/// Four floats from 16 sign-extended codes in `c`, lanes 4q..4q+3.
inline void widenInt8x16(int8x16_t c, float32x4_t w[4]) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(c)), hi = vmovl_s8(vget_high_s8(c));
  w[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo)));
  w[1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo)));
  w[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi)));
  w[3] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi)));
}

/// The upper and lower bytes of the upper 16 bits of float(v) for the INT4
/// code v of each nibble 0..15 (0..7, then -8..-1). A small integer's fp32
/// encoding has zero lower 16 bits, so a table lookup and a shift by 16
/// replace two widenings and a conversion per lane: 18 instead of 23
/// 128-bit operations per block, which the A53 runs at two cycles each.
const uint8_t kInt4FloatHi[16] = {0x00, 0x3f, 0x40, 0x40, 0x40, 0x40,
                                  0x40, 0x40, 0xc1, 0xc0, 0xc0, 0xc0,
                                  0xc0, 0xc0, 0xc0, 0xbf};
const uint8_t kInt4FloatLo[16] = {0x00, 0x80, 0x00, 0x40, 0x80, 0xa0,
                                  0xc0, 0xe0, 0x00, 0xe0, 0xc0, 0xa0,
                                  0x80, 0x40, 0x00, 0x80};

/// Four floats from 16 nibble codes `n`, lanes 4q..4q+3.
inline void int4ToFloatNeon(uint8x16_t n, uint8x16_t tableHi,
                            uint8x16_t tableLo, float32x4_t w[4]) {
  const uint8x16_t hi = vqtbl1q_u8(tableHi, n), lo = vqtbl1q_u8(tableLo, n);
  // Little-endian: the lower byte first in each 16-bit lane.
  const uint16x8_t first = vreinterpretq_u16_u8(vzip1q_u8(lo, hi)),
                   second = vreinterpretq_u16_u8(vzip2q_u8(lo, hi));
  w[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(first), 16));
  w[1] = vreinterpretq_f32_u32(vshll_high_n_u16(first, 16));
  w[2] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(second), 16));
  w[3] = vreinterpretq_f32_u32(vshll_high_n_u16(second, 16));
}

/// The 32 weights of INT4 block `p` (16 bytes) in kernel order: the 16 low
/// nibbles, then the 16 high nibbles, each sign-extended.
inline void decodeInt4Neon(const uint8_t *p, float32x4_t w[8]) {
  const uint8x16_t bytes = vld1q_u8(p);
  const uint8x16_t tableHi = vld1q_u8(kInt4FloatHi),
                   tableLo = vld1q_u8(kInt4FloatLo);
  int4ToFloatNeon(vandq_u8(bytes, vdupq_n_u8(0x0f)), tableHi, tableLo, w);
  int4ToFloatNeon(vshrq_n_u8(bytes, 4), tableHi, tableLo, w + 4);
}

/// The 32 weights of INT8 bytes p[0..31]; with `half`, only p[0..15] exist
/// and the rest are zero.
inline void decodeInt8Neon(const uint8_t *p, bool half, float32x4_t w[8]) {
  widenInt8x16(vreinterpretq_s8_u8(vld1q_u8(p)), w);
  if (half) {
    for (int i = 4; i < 8; ++i)
      w[i] = vdupq_n_f32(0.0f);
    return;
  }
  widenInt8x16(vreinterpretq_s8_u8(vld1q_u8(p + 16)), w + 4);
}

inline void accumulateNeon(float32x4_t acc[8], const float32x4_t w[8],
                           const float *x) {
  for (int i = 0; i < 8; ++i)
    acc[i] = vaddq_f32(acc[i], vmulq_f32(w[i], vld1q_f32(x + 4 * i)));
}

/// acc[j] += acc[j+16], += acc[j+8], += acc[j+4], += acc[j+2], += acc[j+1],
/// as dotScalar does.
inline float combineNeon(const float32x4_t acc[8]) {
  float32x4_t a[4];
  for (int i = 0; i < 4; ++i)
    a[i] = vaddq_f32(acc[i], acc[i + 4]);
  a[0] = vaddq_f32(a[0], a[2]);
  a[1] = vaddq_f32(a[1], a[3]);
  const float32x4_t q = vaddq_f32(a[0], a[1]);
  const float32x2_t h = vadd_f32(vget_low_f32(q), vget_high_f32(q));
  return vget_lane_f32(h, 0) + vget_lane_f32(h, 1);
}

/// One weight row's 32-element block `b` decoded in kernel order. An INT8
/// row ends on a 16-byte boundary: its last block may hold only 16.
template <bool Int4>
inline void decodeBlockNeon(const MatmulJob &job, const uint8_t *row, size_t b,
                            float32x4_t w[8]) {
  if (Int4)
    decodeInt4Neon(row + kBlockBytes4 * b, w);
  else
    decodeInt8Neon(row + kMatmulBlock * b,
                   job.rowStride - kMatmulBlock * b < kMatmulBlock, w);
}

/// Blocks of a row that hold weights (an INT8 row of 16 * odd bytes ends
/// with a half block; its zero half adds +0, which changes no sum).
inline size_t rowBlocks(const MatmulJob &job) {
  return job.int4 ? job.rowStride / kBlockBytes4
                  : (job.rowStride + kMatmulBlock - 1) / kMatmulBlock;
}

/// The format is a template parameter so that the block loop has no branch
/// on it (the A53 is in order).
template <bool Int4>
void featuresNeonOf(const MatmulJob &job, size_t n0, size_t n1) {
  const size_t blocks = rowBlocks(job);
  float32x4_t w[8], acc[8];
  if (job.m == 1) {
    for (size_t n = n0; n < n1; ++n) {
      const uint8_t *row = job.rows + n * job.rowStride;
      for (int i = 0; i < 8; ++i)
        acc[i] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < blocks; ++b) {
        decodeBlockNeon<Int4>(job, row, b, w);
        accumulateNeon(acc, w, job.in + kMatmulBlock * b);
      }
      const float sum = combineNeon(acc);
      job.out[n] = job.scales ? job.scales[n] * sum : sum;
    }
    return;
  }
  // GEMM: decode each weight row once for all activation rows.
  std::vector<float> unpacked(job.kPadded, 0.0f);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    for (size_t b = 0; b < blocks; ++b) {
      decodeBlockNeon<Int4>(job, row, b, w);
      for (int i = 0; i < 8; ++i)
        vst1q_f32(unpacked.data() + kMatmulBlock * b + 4 * i, w[i]);
    }
    for (size_t r = 0; r < job.m; ++r) {
      const float *x = job.in + r * job.kPadded;
      for (int i = 0; i < 8; ++i)
        acc[i] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < blocks; ++b) {
        for (int i = 0; i < 8; ++i)
          w[i] = vld1q_f32(unpacked.data() + kMatmulBlock * b + 4 * i);
        accumulateNeon(acc, w, x + kMatmulBlock * b);
      }
      const float sum = combineNeon(acc);
      job.out[r * job.n + n] = job.scales ? job.scales[n] * sum : sum;
    }
  }
}

void featuresNeon(const MatmulJob &job, size_t n0, size_t n1) {
  if (job.int4)
    featuresNeonOf<true>(job, n0, n1);
  else
    featuresNeonOf<false>(job, n0, n1);
}
#endif // PCCX_SIM_HAVE_NEON

} // namespace

bool matmulIsaAvailable(MatmulIsa isa) {
  switch (isa) {
  case MatmulIsa::Scalar:
    return true;
  case MatmulIsa::Avx2:
#ifdef PCCX_SIM_HAVE_AVX2
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
  case MatmulIsa::Avx512:
#ifdef PCCX_SIM_HAVE_AVX2
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return false;
#endif
  case MatmulIsa::Neon:
#ifdef PCCX_SIM_HAVE_NEON
    return true;
#else
    return false;
#endif
  }
  return false;
}

MatmulIsa bestMatmulIsa() {
  static const MatmulIsa best =
      matmulIsaAvailable(MatmulIsa::Avx512) ? MatmulIsa::Avx512
      : matmulIsaAvailable(MatmulIsa::Avx2) ? MatmulIsa::Avx2
      : matmulIsaAvailable(MatmulIsa::Neon) ? MatmulIsa::Neon
                                            : MatmulIsa::Scalar;
  return best;
}

const char *matmulIsaName(MatmulIsa isa) {
  switch (isa) {
  case MatmulIsa::Avx2:
    return "avx2";
  case MatmulIsa::Avx512:
    return "avx512";
  case MatmulIsa::Neon:
    return "neon";
  case MatmulIsa::Scalar:
    break;
  }
  return "scalar";
}

bool parseMatmulIsa(const std::string &name, MatmulIsa *isa) {
  return parseEnumName(name,
                       {MatmulIsa::Scalar, MatmulIsa::Avx2, MatmulIsa::Avx512,
                        MatmulIsa::Neon},
                       matmulIsaName, isa);
}

void matmulFeatures(const MatmulJob &job, size_t n0, size_t n1, MatmulIsa isa) {
#ifdef PCCX_SIM_HAVE_AVX2
  if (isa == MatmulIsa::Avx2) {
    featuresAvx2(job, n0, n1);
    return;
  }
  if (isa == MatmulIsa::Avx512) {
    featuresAvx512(job, n0, n1);
    return;
  }
#endif
#ifdef PCCX_SIM_HAVE_NEON
  if (isa == MatmulIsa::Neon) {
    featuresNeon(job, n0, n1);
    return;
  }
#endif
  (void)isa;
  featuresScalar(job, n0, n1);
}

void permuteInt4Activations(const float *natural, float *kernelOrder,
                            size_t kPadded) {
  for (size_t b = 0; b < kPadded; b += kMatmulBlock)
    for (size_t i = 0; i < kBlockBytes4; ++i) {
      kernelOrder[b + i] = natural[b + 2 * i];
      kernelOrder[b + kBlockBytes4 + i] = natural[b + 2 * i + 1];
    }
}

} // namespace pccx::sim
