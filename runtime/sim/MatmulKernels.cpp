//===- MatmulKernels.cpp - GEMV/GEMM dot-product kernels ------------------===//
//
// The summation order is the one MatmulKernels.h describes. This file is
// built with -ffp-contract=off: a multiply and the add that follows stay two
// roundings in every kernel (an FMA would round once and change Reference
// numerics, whose fp32 activations make the products inexact).
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulKernels.h"

#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PCCX_SIM_HAVE_AVX2 1
#include <immintrin.h>
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

/// The 32 weights of INT4 block `p` (16 bytes) in kernel order.
PCCX_AVX2_INLINE void decodeInt4(const uint8_t *p, __m256 w[4]) {
  __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  __m256i lo = _mm256_cvtepi8_epi32(bytes);                    // bytes 0-7
  __m256i hi = _mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)); // bytes 8-15
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

/// The weights of one row as floats in kernel order (`blocks` blocks of 32;
/// INT8 elements past rowStride are zero).
PCCX_AVX2 void unpackRowAvx2(const MatmulJob &job, const uint8_t *row,
                             float *w) {
  size_t blocks = job.kPadded / kMatmulBlock;
  __m256 v[4];
  for (size_t b = 0; b < blocks; ++b) {
    float *dst = w + kMatmulBlock * b;
    if (job.int4) {
      decodeInt4(row + kBlockBytes4 * b, v);
      for (int i = 0; i < 4; ++i)
        _mm256_storeu_ps(dst + 8 * i, v[i]);
      continue;
    }
    size_t bytes = job.rowStride - kMatmulBlock * b;
    for (size_t i = 0; i < 4; ++i)
      _mm256_storeu_ps(dst + 8 * i,
                       8 * i < bytes
                           ? decodeInt8x8(row + kMatmulBlock * b + 8 * i)
                           : _mm256_setzero_ps());
  }
}

PCCX_AVX2 float dotAvx2(const float *w, const float *x, size_t n) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps(), _mm256_setzero_ps()};
  __m256 v[4];
  for (size_t k = 0; k < n; k += kMatmulBlock) {
    for (int i = 0; i < 4; ++i)
      v[i] = _mm256_loadu_ps(w + k + 8 * i);
    accumulate(acc, v, x + k);
  }
  return combine(acc);
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
    size_t blocks = job.rowStride / kBlockBytes4;
    for (size_t b = 0; b < blocks; ++b) {
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

PCCX_AVX2 void featuresAvx2(const MatmulJob &job, size_t n0, size_t n1) {
  if (job.m == 1) {
    for (size_t n = n0; n < n1; ++n) {
      float sum = rowDotAvx2(job, job.rows + n * job.rowStride, job.in);
      job.out[n] = job.scales ? job.scales[n] * sum : sum;
    }
    return;
  }
  // GEMM: decode each weight row once for all activation rows.
  std::vector<float> w(job.kPadded);
  for (size_t n = n0; n < n1; ++n) {
    unpackRowAvx2(job, job.rows + n * job.rowStride, w.data());
    for (size_t r = 0; r < job.m; ++r) {
      float sum = dotAvx2(w.data(), job.in + r * job.kPadded, job.kPadded);
      job.out[r * job.n + n] = job.scales ? job.scales[n] * sum : sum;
    }
  }
}
#endif // PCCX_SIM_HAVE_AVX2

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
  }
  return false;
}

MatmulIsa bestMatmulIsa() {
  static const MatmulIsa best =
      matmulIsaAvailable(MatmulIsa::Avx2) ? MatmulIsa::Avx2 : MatmulIsa::Scalar;
  return best;
}

const char *matmulIsaName(MatmulIsa isa) {
  return isa == MatmulIsa::Avx2 ? "avx2" : "scalar";
}

void matmulFeatures(const MatmulJob &job, size_t n0, size_t n1, MatmulIsa isa) {
#ifdef PCCX_SIM_HAVE_AVX2
  if (isa == MatmulIsa::Avx2) {
    featuresAvx2(job, n0, n1);
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
