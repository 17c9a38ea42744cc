//===- MatmulInt8Kernels.cpp - GEMV/GEMM of integer numerics --------------===//
//
// The operations and their order are the ones MatmulInt8Kernels.h defines;
// the integer sums are exact, so the kernels differ only in how they form
// them. Built with -ffp-contract=off, as the float kernels: the scale's
// multiply and the partial sum's add stay two roundings.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulInt8Kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PCCX_INT8_HAVE_AVX2 1
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define PCCX_INT8_HAVE_NEON 1
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif
#endif

namespace pccx::sim {

namespace {

constexpr size_t kBlock = 32;
constexpr size_t kBlockBytes4 = kBlock / 2;

/// p[j] += p[j + 4], p[j] += p[j + 2], p[0] += p[1], then the row's scale.
inline float finish(float *p, const float *scales, size_t n) {
  for (size_t j = 0; j < 4; ++j)
    p[j] = p[j] + p[j + 4];
  for (size_t j = 0; j < 2; ++j)
    p[j] = p[j] + p[j + 2];
  const float sum = p[0] + p[1];
  return scales ? scales[n] * sum : sum;
}

/// Weight block `b` of `row` as 32 codes in kernel order (an INT8 row's
/// last block may hold only 16 weights: the rest are zero).
void weightBlockScalar(const MatmulInt8Job &job, const uint8_t *row, size_t b,
                       int8_t w[kBlock]) {
  if (job.int4) {
    const uint8_t *p = row + kBlockBytes4 * b;
    for (size_t i = 0; i < kBlockBytes4; ++i) {
      w[i] = int8_t(int8_t(uint8_t(p[i] << 4)) >> 4);
      w[kBlockBytes4 + i] = int8_t(int8_t(p[i]) >> 4);
    }
    return;
  }
  const size_t at = kBlock * b, have = std::min(kBlock, job.rowStride - at);
  for (size_t i = 0; i < kBlock; ++i)
    w[i] = i < have ? int8_t(row[at + i]) : 0;
}

void featuresScalar(const MatmulInt8Job &job, size_t n0, size_t n1) {
  std::vector<int8_t> w(job.blocks * kBlock);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    for (size_t b = 0; b < job.blocks; ++b)
      weightBlockScalar(job, row, b, &w[kBlock * b]);
    for (size_t r = 0; r < job.m; ++r) {
      const int8_t *q = job.codes + r * job.codesStride;
      const float *s = job.blockScales + r * (job.codesStride / kBlock);
      float p[kInt8Partials] = {};
      for (size_t b = 0; b < job.blocks; ++b)
        for (size_t j = 0; j < kInt8Partials; ++j) {
          int32_t g = 0;
          for (size_t i = 4 * j; i < 4 * j + 4; ++i)
            g += int32_t(w[kBlock * b + i]) * int32_t(q[kBlock * b + i]);
          p[j] = p[j] + float(g) * s[b];
        }
      job.out[r * job.n + n] = finish(p, job.scales, n);
    }
  }
}

//===----------------------------------------------------------------------===//
// AVX2: a block's 32 products by vpmaddubsw (|w| times q with w's sign) and
// vpmaddwd, eight blocks' sums gathered into one register whose lane j is
// block 8g + j, i.e. partial j.
//===----------------------------------------------------------------------===//

#ifdef PCCX_INT8_HAVE_AVX2
#define PCCX_AVX2 __attribute__((target("avx2")))
#define PCCX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

/// Weight block `b` in kernel order (zeros past an INT8 row's end).
PCCX_AVX2_INLINE __m256i weightBlockAvx2(const MatmulInt8Job &job,
                                         const uint8_t *row, size_t b) {
  if (b >= job.blocks)
    return _mm256_setzero_si256();
  if (job.int4) {
    const __m128i bytes =
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + kBlockBytes4 * b));
    const __m128i nib = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    __m128i lo = _mm_and_si128(bytes, nib);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), nib);
    // A nibble n is the code (n ^ 8) - 8.
    lo = _mm_sub_epi8(_mm_xor_si128(lo, eight), eight);
    hi = _mm_sub_epi8(_mm_xor_si128(hi, eight), eight);
    return _mm256_set_m128i(hi, lo);
  }
  const uint8_t *p = row + kBlock * b;
  if (job.rowStride - kBlock * b < kBlock)
    return _mm256_zextsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
}

/// g[b][0..7] of one block: lane j sums products 4j .. 4j+3.
PCCX_AVX2_INLINE __m256i blockDotAvx2(__m256i w, const int8_t *q) {
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q));
  // |w| <= 128 fits an unsigned byte, and a pair of products an int16.
  const __m256i pairs =
      _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(codes, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

/// p += float(g) * s, two roundings.
PCCX_AVX2_INLINE __m256 addBlock(__m256 p, __m256i g, float s) {
  return _mm256_add_ps(p, _mm256_mul_ps(_mm256_cvtepi32_ps(g),
                                        _mm256_set1_ps(s)));
}

PCCX_AVX2_INLINE float finishAvx2(__m256 p, const float *scales, size_t n) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(p), _mm256_extractf128_ps(p, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  const float sum = _mm_cvtss_f32(q);
  return scales ? scales[n] * sum : sum;
}

PCCX_AVX2 void featuresAvx2(const MatmulInt8Job &job, size_t n0, size_t n1) {
  const size_t scalesStride = job.codesStride / kBlock;
  if (job.m == 1) {
    // Four weight rows at once: each row's partials are one chain of adds
    // (its order), and four independent chains hide the adds' latency.
    size_t n = n0;
    for (; n + 4 <= n1; n += 4) {
      const uint8_t *row = job.rows + n * job.rowStride;
      __m256 p[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (size_t b = 0; b < job.blocks; ++b) {
        const int8_t *q = job.codes + kBlock * b;
        const float s = job.blockScales[b];
        for (size_t i = 0; i < 4; ++i)
          p[i] = addBlock(
              p[i],
              blockDotAvx2(weightBlockAvx2(job, row + i * job.rowStride, b), q),
              s);
      }
      for (size_t i = 0; i < 4; ++i)
        job.out[n + i] = finishAvx2(p[i], job.scales, n + i);
    }
    for (; n < n1; ++n) {
      const uint8_t *row = job.rows + n * job.rowStride;
      __m256 p = _mm256_setzero_ps();
      for (size_t b = 0; b < job.blocks; ++b)
        p = addBlock(p, blockDotAvx2(weightBlockAvx2(job, row, b),
                                     job.codes + kBlock * b),
                     job.blockScales[b]);
      job.out[n] = finishAvx2(p, job.scales, n);
    }
    return;
  }
  // GEMM: each weight block is decoded once for every activation row; row
  // r's partials live at acc[8r .. 8r + 7] between blocks.
  std::vector<float> acc(kInt8Partials * job.m);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t b = 0; b < job.blocks; ++b) {
      const __m256i w = weightBlockAvx2(job, row, b);
      for (size_t r = 0; r < job.m; ++r) {
        float *p = &acc[kInt8Partials * r];
        _mm256_storeu_ps(
            p, addBlock(_mm256_loadu_ps(p),
                        blockDotAvx2(w, job.codes + r * job.codesStride +
                                            kBlock * b),
                        job.blockScales[r * scalesStride + b]));
      }
    }
    for (size_t r = 0; r < job.m; ++r)
      job.out[r * job.n + n] =
          finishAvx2(_mm256_loadu_ps(&acc[kInt8Partials * r]), job.scales, n);
  }
}
#endif // PCCX_INT8_HAVE_AVX2

//===----------------------------------------------------------------------===//
// NEON: the Cortex-A53 (ARMv8.0) has no dot-product instructions: products
// by widening multiplies (smull/smlal) and pairwise widening adds. ARMv8.2
// cores with them (checked at run time) use sdot.
//===----------------------------------------------------------------------===//

#ifdef PCCX_INT8_HAVE_NEON

/// Weight block `b` in kernel order: two registers of 16 codes. The format
/// is a template parameter so that the block loop has no branch on it (the
/// A53 is in order).
template <bool Int4>
inline void weightBlockNeon(const MatmulInt8Job &job, const uint8_t *row,
                            size_t b, int8x16_t w[2]) {
  if (Int4) {
    const uint8x16_t bytes = vld1q_u8(row + kBlockBytes4 * b);
    // Low nibbles: shifted up then arithmetically down; high: shifted down.
    w[0] = vshrq_n_s8(vreinterpretq_s8_u8(vshlq_n_u8(bytes, 4)), 4);
    w[1] = vshrq_n_s8(vreinterpretq_s8_u8(bytes), 4);
    return;
  }
  const uint8_t *p = row + kBlock * b;
  w[0] = vreinterpretq_s8_u8(vld1q_u8(p));
  w[1] = job.rowStride - kBlock * b < kBlock
             ? vdupq_n_s8(0)
             : vreinterpretq_s8_u8(vld1q_u8(p + 16));
}

/// g[b][0..3] (from the first 16 codes) and g[b][4..7] by widening
/// multiplies and two pairwise adds: lane j sums products 4j .. 4j+3.
inline void blockDotNeon(const int8x16_t w[2], const int8_t *q,
                         int32x4_t g[2]) {
  for (int h = 0; h < 2; ++h) {
    const int8x16_t codes = vld1q_s8(q + 16 * h);
    const int32x4_t lo =
        vpaddlq_s16(vmull_s8(vget_low_s8(w[h]), vget_low_s8(codes)));
    const int32x4_t hi = vpaddlq_s16(vmull_high_s8(w[h], codes));
    g[h] = vpaddq_s32(lo, hi);
  }
}

#if defined(__GNUC__) || defined(__clang__)
#define PCCX_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#else
#define PCCX_DOTPROD
#endif

/// The same sums by sdot.
PCCX_DOTPROD inline void blockDotNeonDot(const int8x16_t w[2],
                                         const int8_t *q, int32x4_t g[2]) {
  g[0] = vdotq_s32(vdupq_n_s32(0), w[0], vld1q_s8(q));
  g[1] = vdotq_s32(vdupq_n_s32(0), w[1], vld1q_s8(q + 16));
}

/// p += float(g) * s, two roundings.
inline void addBlockNeon(float32x4_t p[2], const int32x4_t g[2], float s) {
  const float32x4_t scale = vdupq_n_f32(s);
  p[0] = vaddq_f32(p[0], vmulq_f32(vcvtq_f32_s32(g[0]), scale));
  p[1] = vaddq_f32(p[1], vmulq_f32(vcvtq_f32_s32(g[1]), scale));
}

/// Block `b` of four weight rows (from `row`, rowStride apart) against one
/// activation row's codes: each row's partials p[i] take it in order.
/// (bench/a53-loops.cpp analyses this step on the A53.)
template <bool Dot, bool Int4>
inline void fourRowsBlockNeon(const MatmulInt8Job &job, const uint8_t *row,
                              size_t b, float32x4_t p[4][2]) {
  const int8_t *q = job.codes + kBlock * b;
  const float s = job.blockScales[b];
  for (size_t i = 0; i < 4; ++i) {
    int8x16_t w[2];
    int32x4_t g[2];
    weightBlockNeon<Int4>(job, row + i * job.rowStride, b, w);
    if (Dot)
      blockDotNeonDot(w, q, g);
    else
      blockDotNeon(w, q, g);
    addBlockNeon(p[i], g, s);
  }
}

template <bool Dot, bool Int4>
inline void featuresNeonOf(const MatmulInt8Job &job, size_t n0, size_t n1) {
  const size_t scalesStride = job.codesStride / kBlock;
  // Row r's partials live at acc[8r .. 8r + 7] between blocks (GEMM: each
  // weight block is decoded once for every activation row).
  std::vector<float> acc(kInt8Partials * job.m);
  size_t n = n0;
  if (job.m == 1)
    // Four weight rows share each block's activation codes, and their four
    // independent chains keep an in-order core (the A53) from waiting on
    // each row's multiply-add latency.
    for (; n + 4 <= n1; n += 4) {
      const uint8_t *row = job.rows + n * job.rowStride;
      float32x4_t p[4][2];
      for (size_t i = 0; i < 4; ++i)
        p[i][0] = p[i][1] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < job.blocks; ++b)
        fourRowsBlockNeon<Dot, Int4>(job, row, b, p);
      for (size_t i = 0; i < 4; ++i) {
        float out[kInt8Partials];
        vst1q_f32(out, p[i][0]);
        vst1q_f32(out + 4, p[i][1]);
        job.out[n + i] = finish(out, job.scales, n + i);
      }
    }
  for (; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    float32x4_t p[2];
    if (job.m == 1) {
      p[0] = p[1] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < job.blocks; ++b) {
        int8x16_t w[2];
        int32x4_t g[2];
        weightBlockNeon<Int4>(job, row, b, w);
        if (Dot)
          blockDotNeonDot(w, job.codes + kBlock * b, g);
        else
          blockDotNeon(w, job.codes + kBlock * b, g);
        addBlockNeon(p, g, job.blockScales[b]);
      }
      float out[kInt8Partials];
      vst1q_f32(out, p[0]);
      vst1q_f32(out + 4, p[1]);
      job.out[n] = finish(out, job.scales, n);
      continue;
    }
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t b = 0; b < job.blocks; ++b) {
      int8x16_t w[2];
      weightBlockNeon<Int4>(job, row, b, w);
      for (size_t r = 0; r < job.m; ++r) {
        int32x4_t g[2];
        const int8_t *q = job.codes + r * job.codesStride + kBlock * b;
        if (Dot)
          blockDotNeonDot(w, q, g);
        else
          blockDotNeon(w, q, g);
        float *a = &acc[kInt8Partials * r];
        p[0] = vld1q_f32(a);
        p[1] = vld1q_f32(a + 4);
        addBlockNeon(p, g, job.blockScales[r * scalesStride + b]);
        vst1q_f32(a, p[0]);
        vst1q_f32(a + 4, p[1]);
      }
    }
    for (size_t r = 0; r < job.m; ++r)
      job.out[r * job.n + n] =
          finish(&acc[kInt8Partials * r], job.scales, n);
  }
}

PCCX_DOTPROD void featuresNeonDot(const MatmulInt8Job &job, size_t n0,
                                  size_t n1) {
  if (job.int4)
    featuresNeonOf<true, true>(job, n0, n1);
  else
    featuresNeonOf<true, false>(job, n0, n1);
}

void featuresNeon(const MatmulInt8Job &job, size_t n0, size_t n1) {
  if (job.int4)
    featuresNeonOf<false, true>(job, n0, n1);
  else
    featuresNeonOf<false, false>(job, n0, n1);
}

bool cpuHasDotProd() {
#if defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}
#endif // PCCX_INT8_HAVE_NEON

} // namespace

bool int8IsaAvailable(Int8Isa isa) {
  switch (isa) {
  case Int8Isa::Scalar:
    return true;
  case Int8Isa::Avx2:
#ifdef PCCX_INT8_HAVE_AVX2
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
  case Int8Isa::Neon:
#ifdef PCCX_INT8_HAVE_NEON
    return true;
#else
    return false;
#endif
  case Int8Isa::NeonDot:
#ifdef PCCX_INT8_HAVE_NEON
    return cpuHasDotProd();
#else
    return false;
#endif
  }
  return false;
}

Int8Isa bestInt8Isa() {
  static const Int8Isa best = int8IsaAvailable(Int8Isa::Avx2) ? Int8Isa::Avx2
                              : int8IsaAvailable(Int8Isa::NeonDot)
                                  ? Int8Isa::NeonDot
                              : int8IsaAvailable(Int8Isa::Neon)
                                  ? Int8Isa::Neon
                                  : Int8Isa::Scalar;
  return best;
}

const char *int8IsaName(Int8Isa isa) {
  switch (isa) {
  case Int8Isa::Avx2:
    return "avx2";
  case Int8Isa::Neon:
    return "neon";
  case Int8Isa::NeonDot:
    return "neon-dotprod";
  case Int8Isa::Scalar:
    break;
  }
  return "scalar";
}

bool parseInt8Isa(const std::string &name, Int8Isa *isa) {
  for (Int8Isa each :
       {Int8Isa::Scalar, Int8Isa::Avx2, Int8Isa::Neon, Int8Isa::NeonDot})
    if (name == int8IsaName(each)) {
      *isa = each;
      return true;
    }
  return false;
}

void quantizeActivationsInt8(const float *x, size_t kPadded, int8_t *codes,
                             float *blockScales) {
  for (size_t b = 0; b < kPadded; b += kBlock) {
    float amax = 0.0f;
    bool finite = true;
    for (size_t i = 0; i < kBlock; ++i) {
      finite &= std::isfinite(x[b + i]);
      amax = std::max(amax, std::fabs(x[b + i]));
    }
    // A NaN or an infinity makes the block's scale NaN: every sum it joins
    // is NaN, as in the other numerics, and the step is refused.
    const float scale = finite ? amax / 127.0f : NAN;
    blockScales[b / kBlock] = scale;
    for (size_t i = 0; i < kBlock; ++i) {
      const long q = finite && scale > 0.0f ? std::lround(x[b + i] / scale) : 0;
      codes[b + i] = int8_t(std::clamp<long>(q, -127, 127));
    }
  }
}

void matmulInt8Features(const MatmulInt8Job &job, size_t n0, size_t n1,
                        Int8Isa isa) {
#ifdef PCCX_INT8_HAVE_AVX2
  if (isa == Int8Isa::Avx2) {
    featuresAvx2(job, n0, n1);
    return;
  }
#endif
#ifdef PCCX_INT8_HAVE_NEON
  if (isa == Int8Isa::NeonDot) {
    featuresNeonDot(job, n0, n1);
    return;
  }
  if (isa == Int8Isa::Neon) {
    featuresNeon(job, n0, n1);
    return;
  }
#endif
  (void)isa;
  featuresScalar(job, n0, n1);
}

} // namespace pccx::sim
