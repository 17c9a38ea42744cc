//===- QuantizeSearchAvx2.cpp - AVX2 form of the INT4 scale search --------===//
//
// Mirrors the portable quantizeRowInt4Search of Quantize.cpp operation for
// operation: the same fp32 products and sums into the same eight partial
// sums, the same sequential double sums, std::round and std::min/max
// reproduced exactly (NaN included). Only FMA-free AVX2 is enabled, so no
// multiply and add are fused. Candidates keep only their sums; the winner's
// codes are computed again at the end.
//
//===----------------------------------------------------------------------===//

#include "hw/numerics/QuantizeSearchAvx2.h"

#include "hw/numerics/Quantize.h"

#include <algorithm>
#include <cmath>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PCCX_QUANTIZE_AVX2 1
#endif

namespace pccx::hw::detail {

#ifdef PCCX_QUANTIZE_AVX2
namespace {

#define PCCX_AVX2 __attribute__((target("avx2")))
#define PCCX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

/// std::min(7.0f, std::max(-8.0f, std::round(y))) for eight lanes: truncate,
/// then step away from zero when the dropped fraction is at least a half
/// (exact: y - trunc(y) is exact, and y is already whole from 2^23 on). A
/// NaN ends at -8 as in the std::max / std::min comparisons.
PCCX_AVX2_INLINE __m256 roundClampAbsmax(__m256 y) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m256 frac = _mm256_sub_ps(y, t);
  t = _mm256_add_ps(
      t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                       one));
  t = _mm256_sub_ps(
      t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ),
                       one));
  // max_ps returns its second operand when the first is NaN.
  t = _mm256_max_ps(t, _mm256_set1_ps(-8.0f));
  return _mm256_min_ps(t, _mm256_set1_ps(7.0f));
}

/// The portable candidate code: int(x), a half step away from zero, clamp.
PCCX_AVX2_INLINE __m256i candidateCode(__m256 x) {
  __m256i v = _mm256_cvttps_epi32(x);
  __m256 frac = _mm256_sub_ps(x, _mm256_cvtepi32_ps(v));
  __m256i up = _mm256_castps_si256(
      _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ));
  __m256i down = _mm256_castps_si256(
      _mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ));
  v = _mm256_add_epi32(_mm256_sub_epi32(v, up), down); // masks are -1
  v = _mm256_max_epi32(v, _mm256_set1_epi32(-8));
  return _mm256_min_epi32(v, _mm256_set1_epi32(7));
}

int scalarCandidateCode(float x) {
  int v = int(x);
  const float frac = x - float(v);
  v += int(frac >= 0.5f) - int(frac <= -0.5f);
  return std::min(7, std::max(-8, v));
}

PCCX_AVX2_INLINE void storeCodes(__m256i v, int8_t *out) {
  __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v),
                                  _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i *>(out),
                   _mm_packs_epi16(words, words));
}

/// The codes of candidate `inverse` into q.
PCCX_AVX2 void candidateCodes(const float *row, size_t n, float inverse,
                              int8_t *q) {
  const __m256 inv = _mm256_set1_ps(inverse);
  const size_t body = n / 8 * 8;
  for (size_t i = 0; i < body; i += 8)
    storeCodes(candidateCode(_mm256_mul_ps(_mm256_loadu_ps(row + i), inv)),
               q + i);
  for (size_t i = body; i < n; ++i)
    q[i] = int8_t(scalarCandidateCode(row[i] * inverse));
}

} // namespace

bool haveQuantizeSearchAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}

PCCX_AVX2 float quantizeRowInt4SearchAvx2(const float *row, size_t n,
                                          int8_t *q) {
  const size_t body = n / 8 * 8;
  // max|row|, NaN ignored as std::max(maxAbs, NaN) does.
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (size_t i = 0; i < body; i += 8)
    m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(row + i), absMask), m);
  float lanes[8];
  _mm256_storeu_ps(lanes, m);
  float maxAbs = 0;
  for (float v : lanes)
    maxAbs = std::max(maxAbs, v);
  for (size_t i = body; i < n; ++i)
    maxAbs = std::max(maxAbs, std::fabs(row[i]));

  // The absmax candidate (quantizeRowInt4).
  const float absmaxScale = maxAbs / 7.0f;
  std::vector<int8_t> own;
  if (!q) {
    own.resize(n);
    q = own.data();
  }
  if (absmaxScale == 0) {
    std::fill(q, q + n, int8_t(0));
    return absmaxScale;
  }
  const __m256 scaleV = _mm256_set1_ps(absmaxScale);
  for (size_t i = 0; i < body; i += 8)
    storeCodes(_mm256_cvttps_epi32(roundClampAbsmax(
                   _mm256_div_ps(_mm256_loadu_ps(row + i), scaleV))),
               q + i);
  for (size_t i = body; i < n; ++i)
    q[i] = int8_t(
        std::min(7.0f, std::max(-8.0f, std::round(row[i] / absmaxScale))));

  // Sequential double sums, as the portable form forms them.
  double rowSquares = 0, bestDot = 0, bestNorm = 0;
  for (size_t i = 0; i < n; ++i) {
    rowSquares += double(row[i]) * row[i];
    bestDot += double(row[i]) * q[i];
    bestNorm += double(q[i]) * q[i];
  }
  ScaleSearchBest search(rowSquares, bestDot, bestNorm, absmaxScale);
  int bestCandidate = -1;
  for (int k = 0; k <= kScaleSearchSteps; ++k) {
    const float inverse = (7.0f + 0.25f * float(k)) / maxAbs;
    const __m256 inv = _mm256_set1_ps(inverse);
    __m256 dots = _mm256_setzero_ps();
    __m256i norms = _mm256_setzero_si256();
    for (size_t i = 0; i < body; i += 8) {
      __m256 w = _mm256_loadu_ps(row + i);
      __m256i v = candidateCode(_mm256_mul_ps(w, inv));
      dots = _mm256_add_ps(dots, _mm256_mul_ps(w, _mm256_cvtepi32_ps(v)));
      __m256i a = _mm256_abs_epi32(v); // |v| <= 8: a 16-bit product is exact
      norms = _mm256_add_epi32(norms, _mm256_mullo_epi16(a, a));
    }
    float dotLanes[8];
    int32_t normLanes[8];
    _mm256_storeu_ps(dotLanes, dots);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(normLanes), norms);
    for (size_t i = body; i < n; ++i) {
      const int v = scalarCandidateCode(row[i] * inverse);
      dotLanes[i - body] += row[i] * float(v);
      normLanes[i - body] += v * v;
    }
    if (search.offer(dotLanes, normLanes))
      bestCandidate = k;
  }
  if (bestCandidate >= 0)
    candidateCodes(row, n, (7.0f + 0.25f * float(bestCandidate)) / maxAbs, q);
  return search.scale();
}

#else

bool haveQuantizeSearchAvx2() { return false; }
float quantizeRowInt4SearchAvx2(const float *row, size_t n, int8_t *q) {
  return quantizeRowInt4Search(row, n, q, QuantizeIsa::Portable);
}

#endif

} // namespace pccx::hw::detail
