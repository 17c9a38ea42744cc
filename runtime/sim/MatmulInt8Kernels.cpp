//===- MatmulInt8Kernels.cpp - GEMV/GEMM of integer numerics --------------===//
//
// The operations and their order are the ones MatmulInt8Kernels.h defines;
// the integer sums are exact, so the kernels differ only in how they form
// them. Built with -ffp-contract=off, as the float kernels: the scale's
// multiply and the partial sum's add stay two roundings.
//
// Every kernel walks a weight row block by block (128 elements: four groups
// of 32, each 16 bytes of INT4 or 32 of INT8), forms the block's 16 integer
// partials in registers and folds them into the row's float partials. A GEMM
// decodes each block's weights once for all its activation rows.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/MatmulInt8Kernels.h"
#include "runtime/sim/EnumNames.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PCCX_INT8_HAVE_X86 1
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

constexpr size_t kGroup = 32;
constexpr size_t kGroupBytes4 = kGroup / 2;
constexpr size_t kGroupsPerBlock = kInt8Block / kGroup;
/// How far ahead of the weights it multiplies a kernel asks for the next
/// ones: rows stream from DRAM through 4 KiB pages, where the hardware
/// prefetcher stops (a prefetch past the record's end never faults).
constexpr size_t kPrefetchBytes = 2048;

/// How many passes over `passBytes` of weight rows ahead a GEMV of one
/// activation row asks for weights: at least kPrefetchAheadBytes (an
/// E2B-shaped decode on one core of a Zen 4 VM: 4 KiB ahead, 21.0 tokens/s;
/// 16 KiB, 21.0; 64 KiB, 23.3).
constexpr size_t kPrefetchAheadBytes = 65536;
inline size_t prefetchPasses(size_t passBytes) {
  return std::max<size_t>(1, (kPrefetchAheadBytes + passBytes - 1) / passBytes);
}

size_t blocksOf(const MatmulInt8Job &job) {
  return job.codesStride / kInt8Block;
}

/// p[j] += p[j + 8], p[j + 4], p[j + 2], p[j + 1] in turn, then the row's
/// scale.
inline float finish(float *p, const float *scales, size_t n) {
  for (size_t half = kInt8Partials / 2; half > 1; half /= 2)
    for (size_t j = 0; j < half; ++j)
      p[j] = p[j] + p[j + half];
  const float sum = p[0] + p[1];
  return scales ? scales[n] * sum : sum;
}

/// Whether group `g` of a row holds weights, and how many of its bytes do
/// (an INT8 row ends on a 16-byte boundary, so its last group may hold 16).
inline size_t groupBytes(const MatmulInt8Job &job, size_t g) {
  if (g >= job.groups)
    return 0;
  if (job.int4)
    return kGroupBytes4;
  return std::min(kGroup, job.rowStride - kGroup * g);
}

/// Group `g` of `row` as 32 codes in kernel order (zeros past the row).
void weightGroupScalar(const MatmulInt8Job &job, const uint8_t *row, size_t g,
                       int8_t w[kGroup]) {
  if (job.int4) {
    const uint8_t *p = row + kGroupBytes4 * g;
    for (size_t i = 0; i < kGroupBytes4; ++i) {
      w[i] = int8_t(int8_t(uint8_t(p[i] << 4)) >> 4);
      w[kGroupBytes4 + i] = int8_t(int8_t(p[i]) >> 4);
    }
    return;
  }
  const size_t have = groupBytes(job, g);
  for (size_t i = 0; i < kGroup; ++i)
    w[i] = i < have ? int8_t(row[kGroup * g + i]) : 0;
}

void featuresScalar(const MatmulInt8Job &job, size_t n0, size_t n1) {
  const size_t blocks = blocksOf(job);
  // Past the groups that hold weights the codes stay zero.
  std::vector<int8_t> w(job.codesStride, 0);
  for (size_t n = n0; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    for (size_t g = 0; g < job.groups; ++g)
      weightGroupScalar(job, row, g, &w[kGroup * g]);
    for (size_t r = 0; r < job.m; ++r) {
      const int8_t *q = job.codes + r * job.codesStride;
      const float *s = job.blockScales + r * blocks;
      float p[kInt8Partials] = {};
      for (size_t b = 0; b < blocks; ++b) {
        int32_t g[kInt8Partials] = {};
        for (size_t e = 0; e < kInt8Block; ++e)
          g[(e % 64) / 4] += int32_t(w[kInt8Block * b + e]) *
                             int32_t(q[kInt8Block * b + e]);
        for (size_t j = 0; j < kInt8Partials; ++j)
          p[j] = p[j] + float(g[j]) * s[b];
      }
      job.out[r * job.n + n] = finish(p, job.scales, n);
    }
  }
}

#ifdef PCCX_INT8_HAVE_X86
//===----------------------------------------------------------------------===//
// AVX2: a group's 32 products by vpmaddubsw (an unsigned byte times a signed
// one, pairs summed to 16 bits) and vpmaddwd (pairs to 32 bits): lane l sums
// products 4l .. 4l+3, i.e. partial l of an even group, 8 + l of an odd one.
// An INT4 code w is taken as the unsigned w + 8 (its nibble with the top bit
// flipped), and the block's 8 * (sum of the partial's codes) is subtracted
// (by starting the sums there): no sign fix-up per group. An INT8 code
// keeps vpsignb's |w| times q * sign(w) (w + 128 could overflow vpmaddubsw).
//===----------------------------------------------------------------------===//

#define PCCX_AVX2 __attribute__((target("avx2")))
#define PCCX_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

/// Lane j of a block's partials 0-7 (lo) and 8-15 (hi): a float register
/// pair per activation row.
struct Partials8x2 {
  __m256 lo, hi;
};

/// The unsigned codes w + 8 of INT4 group bytes p[0..15], kernel order.
PCCX_AVX2_INLINE __m256i int4GroupUnsignedAvx2(const uint8_t *p) {
  const __m256i bytes = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  // Low nibbles in the low half, high nibbles (shifted down) in the high.
  const __m256i shifted = _mm256_srlv_epi64(
      _mm256_xor_si256(bytes, _mm256_set1_epi8(char(0x88))),
      _mm256_setr_epi64x(0, 0, 4, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f));
}

/// The INT8 codes of group `g` (zeros past the row).
PCCX_AVX2_INLINE __m256i int8GroupAvx2(const uint8_t *p, size_t have) {
  if (have < kGroup)
    return _mm256_zextsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
}

PCCX_AVX2_INLINE __m256i sumPairsAvx2(__m256i pairs16) {
  return _mm256_madd_epi16(pairs16, _mm256_set1_epi16(1));
}

/// sum (w + 8) * q per lane (INT4, `u` from int4GroupUnsignedAvx2).
PCCX_AVX2_INLINE __m256i dotUnsignedAvx2(__m256i u, const int8_t *q) {
  return sumPairsAvx2(_mm256_maddubs_epi16(
      u, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q))));
}

/// sum w * q per lane (INT8).
PCCX_AVX2_INLINE __m256i dotSignedAvx2(__m256i w, const int8_t *q) {
  const __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q));
  // |w| <= 128 fits an unsigned byte, and a pair of products an int16.
  return sumPairsAvx2(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w),
                                           _mm256_sign_epi8(codes, w)));
}

/// p = p + float(g) * s, two roundings.
PCCX_AVX2_INLINE __m256 foldAvx2(__m256 p, __m256i g, __m256 s) {
  return _mm256_add_ps(p, _mm256_mul_ps(_mm256_cvtepi32_ps(g), s));
}

/// The 8-lane reduction of MatmulInt8Kernels.h after p[j] += p[j + 8].
PCCX_AVX2_INLINE float finish8Avx2(__m256 p, const float *scales, size_t n) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(p), _mm256_extractf128_ps(p, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
  const float sum = _mm_cvtss_f32(q);
  return scales ? scales[n] * sum : sum;
}

/// finish8Avx2 of four rows at once, lane i of the result row i's: `v[i]`
/// is row i's p[j] + p[j + 8]. The same adds on the same pairs, only
/// transposed (a row of a block or two pays for its reduction as much as
/// for its products otherwise).
PCCX_AVX2_INLINE __m128 finish8x4Avx2(const __m256 v[4], const float *scales,
                                      size_t n) {
  // p[j] += p[j + 4]: rows 0 and 2 in the low halves, 1 and 3 in the high.
  const __m256 h0 = _mm256_add_ps(_mm256_permute2f128_ps(v[0], v[1], 0x20),
                                  _mm256_permute2f128_ps(v[0], v[1], 0x31));
  const __m256 h1 = _mm256_add_ps(_mm256_permute2f128_ps(v[2], v[3], 0x20),
                                  _mm256_permute2f128_ps(v[2], v[3], 0x31));
  // p[j] += p[j + 2]: [row0 p0 p1, row2 p0 p1 | row1 p0 p1, row3 p0 p1].
  const __m256 q = _mm256_add_ps(
      _mm256_shuffle_ps(h0, h1, _MM_SHUFFLE(1, 0, 1, 0)),
      _mm256_shuffle_ps(h0, h1, _MM_SHUFFLE(3, 2, 3, 2)));
  // p[0] + p[1]: [row0, row2, ... | row1, row3, ...].
  const __m256 r = _mm256_add_ps(_mm256_shuffle_ps(q, q, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm256_shuffle_ps(q, q, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m128 sums = _mm_unpacklo_ps(_mm256_castps256_ps128(r),
                                      _mm256_extractf128_ps(r, 1));
  return scales ? _mm_mul_ps(_mm_loadu_ps(scales + n), sums) : sums;
}

/// The block's four groups of weights (zero where a group is missing).
PCCX_AVX2_INLINE void blockWeightsAvx2(const MatmulInt8Job &job,
                                       const uint8_t *row, size_t b,
                                       __m256i w[kGroupsPerBlock]) {
  for (size_t i = 0; i < kGroupsPerBlock; ++i) {
    const size_t g = kGroupsPerBlock * b + i, have = groupBytes(job, g);
    w[i] = !have      ? _mm256_setzero_si256()
           : job.int4 ? int4GroupUnsignedAvx2(row + kGroupBytes4 * g)
                      : int8GroupAvx2(row + kGroup * g, have);
  }
}

/// Where row `r`'s block `b` starts its integer sums: -8 * (the partials'
/// code sums) for INT4 (its codes taken as w + 8), else zero.
PCCX_AVX2_INLINE void blockStartAvx2(const MatmulInt8Job &job, size_t r,
                                     size_t b, __m256i start[2]) {
  start[0] = start[1] = _mm256_setzero_si256();
  if (!job.int4)
    return;
  const int32_t *sums =
      job.codeSums + (r * blocksOf(job) + b) * kInt8Partials;
  for (int h = 0; h < 2; ++h)
    start[h] = _mm256_slli_epi32(
        _mm256_sub_epi32(_mm256_setzero_si256(),
                         _mm256_loadu_si256(
                             reinterpret_cast<const __m256i *>(sums + 8 * h))),
        3);
}

/// The groups of block `b` that hold weights (a record of a K-slice of 32
/// or 64 columns fills part of its one block).
inline size_t groupsInBlock(const MatmulInt8Job &job, size_t b) {
  const size_t first = kGroupsPerBlock * b;
  return job.groups > first ? std::min(kGroupsPerBlock, job.groups - first)
                            : 0;
}

/// Row `r`'s block `b` against weights `w`, its sums started at `start`:
/// its partials folded into p. Groups from `used` on hold no weights: their
/// codes are zero, their products add nothing, and they are skipped.
PCCX_AVX2_INLINE void foldBlockAvx2(const MatmulInt8Job &job, size_t r,
                                    size_t b, const __m256i w[kGroupsPerBlock],
                                    const __m256i start[2], Partials8x2 &p,
                                    size_t used = kGroupsPerBlock) {
  const int8_t *q = job.codes + r * job.codesStride + kInt8Block * b;
  __m256i acc[2] = {start[0], start[1]};
  // A missing group's codes are zero: its (zero or plus-8) weights add 0.
  for (size_t i = 0; i < used; ++i)
    acc[i % 2] = _mm256_add_epi32(
        acc[i % 2], job.int4 ? dotUnsignedAvx2(w[i], q + kGroup * i)
                             : dotSignedAvx2(w[i], q + kGroup * i));
  const __m256 s = _mm256_set1_ps(job.blockScales[r * blocksOf(job) + b]);
  p.lo = foldAvx2(p.lo, acc[0], s);
  p.hi = foldAvx2(p.hi, acc[1], s);
}

PCCX_AVX2_INLINE void foldBlockAvx2(const MatmulInt8Job &job, size_t r,
                                    size_t b, const __m256i w[kGroupsPerBlock],
                                    Partials8x2 &p) {
  __m256i start[2];
  blockStartAvx2(job, r, b, start);
  foldBlockAvx2(job, r, b, w, start, p);
}

PCCX_AVX2_INLINE void prefetchBlock(const MatmulInt8Job &job,
                                    const uint8_t *row, size_t b) {
  _mm_prefetch(reinterpret_cast<const char *>(row) +
                   (job.int4 ? kGroupBytes4 : kGroup) * kGroupsPerBlock * b +
                   kPrefetchBytes,
               _MM_HINT_T0);
}

PCCX_AVX2 void featuresAvx2(const MatmulInt8Job &job, size_t n0, size_t n1) {
  const size_t blocks = blocksOf(job);
  size_t n = n0;
  if (job.m == 1 && n + 4 <= n1) {
    // Four weight rows per pass, their partials in registers (independent
    // chains of adds), reduced together; the blocks' start values, which
    // every row shares, computed once.
    // (int32 lanes: a vector of __m256i would lose their alignment.)
    std::vector<int32_t> starts(16 * blocks);
    for (size_t b = 0; b < blocks; ++b) {
      __m256i start[2];
      blockStartAvx2(job, 0, b, start);
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_si256(
            reinterpret_cast<__m256i *>(&starts[16 * b + 8 * h]), start[h]);
    }
    constexpr size_t kRows = 4;
    const size_t blockBytes =
        (job.int4 ? kGroupBytes4 : kGroup) * kGroupsPerBlock;
    // The same block of a row some passes ahead.
    const size_t ahead =
        kRows * prefetchPasses(kRows * job.rowStride) * job.rowStride;
    for (; n + kRows <= n1; n += kRows) {
      const uint8_t *row = job.rows + n * job.rowStride;
      Partials8x2 p[kRows];
      for (Partials8x2 &each : p)
        each.lo = each.hi = _mm256_setzero_ps();
      for (size_t b = 0; b < blocks; ++b) {
        const size_t used = groupsInBlock(job, b);
        const __m256i start[2] = {
            _mm256_loadu_si256(
                reinterpret_cast<const __m256i *>(&starts[16 * b])),
            _mm256_loadu_si256(
                reinterpret_cast<const __m256i *>(&starts[16 * b + 8]))};
        for (size_t i = 0; i < kRows; ++i) {
          const uint8_t *at = row + i * job.rowStride + blockBytes * b;
          _mm_prefetch(reinterpret_cast<const char *>(at) + ahead,
                       _MM_HINT_T0);
          __m256i w[kGroupsPerBlock];
          for (size_t g = 0; g < used; ++g)
            w[g] = job.int4 ? int4GroupUnsignedAvx2(at + kGroupBytes4 * g)
                            : int8GroupAvx2(at + kGroup * g,
                                            groupBytes(job, kGroupsPerBlock * b + g));
          foldBlockAvx2(job, 0, b, w, start, p[i], used);
        }
      }
      __m256 v[kRows];
      for (size_t i = 0; i < kRows; ++i)
        v[i] = _mm256_add_ps(p[i].lo, p[i].hi);
      _mm_storeu_ps(job.out + n, finish8x4Avx2(v, job.scales, n));
    }
  }
  if (job.m == 1)
    // Two weight rows per pass, their partials in registers: independent
    // chains of adds.
    for (; n + 2 <= n1; n += 2) {
      const uint8_t *row = job.rows + n * job.rowStride;
      Partials8x2 p[2];
      for (Partials8x2 &each : p)
        each.lo = each.hi = _mm256_setzero_ps();
      for (size_t b = 0; b < blocks; ++b) {
        for (size_t i = 0; i < 2; ++i) {
          // The same block of a row some passes ahead.
          _mm_prefetch(reinterpret_cast<const char *>(row) +
                           (i + 2 * prefetchPasses(2 * job.rowStride)) *
                               job.rowStride +
                           (job.int4 ? kGroupBytes4 : kGroup) *
                               kGroupsPerBlock * b,
                       _MM_HINT_T0);
          __m256i w[kGroupsPerBlock];
          blockWeightsAvx2(job, row + i * job.rowStride, b, w);
          foldBlockAvx2(job, 0, b, w, p[i]);
        }
      }
      for (size_t i = 0; i < 2; ++i)
        job.out[n + i] =
            finish8Avx2(_mm256_add_ps(p[i].lo, p[i].hi), job.scales, n + i);
    }
  // GEMM (and a GEMV's last row): each block's weights are decoded once for
  // every activation row.
  std::vector<float> part(2 * 8 * job.m);
  for (; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    std::fill(part.begin(), part.end(), 0.0f);
    for (size_t b = 0; b < blocks; ++b) {
      __m256i w[kGroupsPerBlock];
      blockWeightsAvx2(job, row, b, w);
      prefetchBlock(job, row, b);
      for (size_t r = 0; r < job.m; ++r) {
        float *at = &part[16 * r];
        Partials8x2 p{_mm256_loadu_ps(at), _mm256_loadu_ps(at + 8)};
        foldBlockAvx2(job, r, b, w, p);
        _mm256_storeu_ps(at, p.lo);
        _mm256_storeu_ps(at + 8, p.hi);
      }
    }
    for (size_t r = 0; r < job.m; ++r)
      job.out[r * job.n + n] = finish8Avx2(
          _mm256_add_ps(_mm256_loadu_ps(&part[16 * r]),
                        _mm256_loadu_ps(&part[16 * r + 8])),
          job.scales, n);
  }
}

//===----------------------------------------------------------------------===//
// AVX-512 VNNI: vpdpbusd adds four unsigned-times-signed byte products into
// each 32-bit lane, so a zmm of 64 codes gives 16 lanes of a block's
// partials in one instruction, and the block's two halves accumulate in
// place. Weights are unsigned codes w + 8 (INT4) or w + 128 (INT8), and the
// sums start at -8 or -128 times the partials' code sums.
//
// An INT4 half block (two groups, 32 bytes) is broadcast to both halves of
// a zmm and the upper copy shifted down by four bits: its 128-bit lanes hold
// group 0's low nibbles, group 1's low, group 0's high, group 1's high. The
// activation codes are reordered to match (lanes 1 and 2 of each half
// swapped), so lane l holds partial l with those two 128-bit lanes swapped,
// which the start values and the final reduction undo.
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 headers pass _mm512_undefined_* as the unused source of
// their masked builtins, which -Wmaybe-uninitialized reports (a false
// positive of the headers).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define PCCX_VNNI                                                              \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define PCCX_VNNI_INLINE                                                       \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni"),     \
                 always_inline)) inline

/// 128-bit lanes 0, 2, 1, 3 (its own inverse).
constexpr int kSwapMiddleLanes = 0 | (2 << 2) | (1 << 4) | (3 << 6);

/// The unsigned codes of groups g and g + 1 of `row` (`have` of their
/// bytes hold weights; lane order as above for INT4).
PCCX_VNNI_INLINE __m512i halfBlockVnni(const MatmulInt8Job &job,
                                       const uint8_t *row, size_t g,
                                       size_t have) {
  if (!have)
    return _mm512_setzero_si512();
  if (job.int4) {
    const uint8_t *p = row + kGroupBytes4 * g;
    const __m256i bytes =
        have == 2 * kGroupBytes4
            ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))
            : _mm256_zextsi128_si256(
                  _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    const __m512i shifted = _mm512_srlv_epi64(
        _mm512_broadcast_i64x4(bytes),
        _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4));
    // (nibble ^ 8) & 15: the code plus 8 (a missing group's 8s meet zero
    // codes).
    return _mm512_ternarylogic_epi64(shifted, _mm512_set1_epi8(0x08),
                                     _mm512_set1_epi8(0x0f), 0x28);
  }
  const __m512i bytes =
      have == 2 * kGroup
          ? _mm512_loadu_si512(row + kGroup * g)
          : _mm512_maskz_loadu_epi8(~0ULL >> (64 - have), row + kGroup * g);
  return _mm512_xor_si512(bytes, _mm512_set1_epi8(char(0x80)));
}

/// A block's unsigned weight codes: two halves of 64 (any block).
PCCX_VNNI_INLINE void blockWeightsVnni(const MatmulInt8Job &job,
                                       const uint8_t *row, size_t b,
                                       __m512i u[2]) {
  for (size_t h = 0; h < 2; ++h) {
    const size_t g = kGroupsPerBlock * b + 2 * h;
    u[h] = halfBlockVnni(job, row, g, groupBytes(job, g) + groupBytes(job, g + 1));
  }
}

/// The same for a block whose four groups hold weights, `p` its bytes.
template <bool Int4>
PCCX_VNNI_INLINE __m512i fullHalfBlockVnni(const uint8_t *p) {
  if (Int4) {
    const __m512i shifted = _mm512_srlv_epi64(
        _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))),
        _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm512_ternarylogic_epi64(shifted, _mm512_set1_epi8(0x08),
                                     _mm512_set1_epi8(0x0f), 0x28);
  }
  return _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set1_epi8(char(0x80)));
}

/// What the kernel reads of an activation row's block, in lane order: the
/// sums' start values (16 int32) and the two halves of codes (64 each).
constexpr size_t kActivationBlockBytes = 3 * 64;

/// Lays out every row's blocks for the kernel (once per call: the codes are
/// shared by all the weight rows).
PCCX_VNNI void activationBlocksVnni(const MatmulInt8Job &job,
                                    std::vector<int8_t> &out) {
  const size_t blocks = blocksOf(job);
  out.resize(job.m * blocks * kActivationBlockBytes);
  for (size_t r = 0; r < job.m; ++r)
    for (size_t b = 0; b < blocks; ++b) {
      int8_t *to = &out[(r * blocks + b) * kActivationBlockBytes];
      const __m512i sums =
          _mm512_loadu_si512(job.codeSums + (r * blocks + b) * kInt8Partials);
      const __m512i neg = _mm512_sub_epi32(_mm512_setzero_si512(), sums);
      const int8_t *codes = job.codes + r * job.codesStride + kInt8Block * b;
      __m512i start = _mm512_slli_epi32(neg, 7), q[2];
      for (size_t h = 0; h < 2; ++h)
        q[h] = _mm512_loadu_si512(codes + 64 * h);
      if (job.int4) {
        start = _mm512_slli_epi32(
            _mm512_shuffle_i32x4(neg, neg, kSwapMiddleLanes), 3);
        for (size_t h = 0; h < 2; ++h)
          q[h] = _mm512_shuffle_i32x4(q[h], q[h], kSwapMiddleLanes);
      }
      _mm512_storeu_si512(to, start);
      _mm512_storeu_si512(to + 64, q[0]);
      _mm512_storeu_si512(to + 128, q[1]);
    }
}

/// p = p + float(the block's partials) * s.
PCCX_VNNI_INLINE __m512 foldBlockVnni(__m512 p, const int8_t *a,
                                      const __m512i u[2], __m512 s) {
  const __m512i acc = _mm512_dpbusd_epi32(
      _mm512_dpbusd_epi32(_mm512_loadu_si512(a), u[0],
                          _mm512_loadu_si512(a + 64)),
      u[1], _mm512_loadu_si512(a + 128));
  return _mm512_add_ps(p, _mm512_mul_ps(_mm512_cvtepi32_ps(acc), s));
}

PCCX_VNNI_INLINE float finishVnni(const MatmulInt8Job &job, __m512 p,
                                  size_t n) {
  if (job.int4)
    p = _mm512_shuffle_f32x4(p, p, kSwapMiddleLanes);
  return finish8Avx2(
      _mm256_add_ps(_mm512_castps512_ps256(p), _mm512_extractf32x8_ps(p, 1)),
      job.scales, n);
}

/// Blocks whose four groups all hold weights (the rest take the general
/// path).
inline size_t fullBlocksOf(const MatmulInt8Job &job) {
  return job.int4 ? job.groups / kGroupsPerBlock
                  : job.rowStride / kInt8Block;
}

/// GEMV over R weight rows at a time: they share each block of codes, and
/// their partials stay in registers as independent chains. The next pass's
/// rows are asked for a pass ahead (weights stream from DRAM through 4 KiB
/// pages, where the hardware prefetcher stops).
template <bool Int4, size_t R>
PCCX_VNNI_INLINE void gemvRowsVnni(const MatmulInt8Job &job,
                                   const int8_t *acts, size_t n) {
  constexpr size_t blockBytes =
      (Int4 ? kGroupBytes4 : kGroup) * kGroupsPerBlock;
  const size_t blocks = blocksOf(job), full = fullBlocksOf(job);
  const uint8_t *row = job.rows + n * job.rowStride;
  const size_t ahead = prefetchPasses(R * job.rowStride) * R * job.rowStride;
  __m512 p[R];
  for (size_t i = 0; i < R; ++i)
    p[i] = _mm512_setzero_ps();
  size_t b = 0;
  for (; b < full; ++b) {
    const int8_t *a = acts + kActivationBlockBytes * b;
    const __m512 s = _mm512_set1_ps(job.blockScales[b]);
    for (size_t i = 0; i < R; ++i) {
      const uint8_t *w = row + i * job.rowStride + blockBytes * b;
      for (size_t line = 0; line < blockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char *>(w) + ahead + line,
                     _MM_HINT_T0);
      const __m512i u[2] = {fullHalfBlockVnni<Int4>(w),
                            fullHalfBlockVnni<Int4>(w + blockBytes / 2)};
      p[i] = foldBlockVnni(p[i], a, u, s);
    }
  }
  for (; b < blocks; ++b)
    for (size_t i = 0; i < R; ++i) {
      __m512i u[2];
      blockWeightsVnni(job, row + i * job.rowStride, b, u);
      p[i] = foldBlockVnni(p[i], acts + kActivationBlockBytes * b, u,
                           _mm512_set1_ps(job.blockScales[b]));
    }
  for (size_t i = 0; i < R; ++i)
    job.out[n + i] = finishVnni(job, p[i], n + i);
}

/// Weight rows per pass when there is one activation row.
constexpr size_t kVnniRows = 4;

template <bool Int4>
PCCX_VNNI_INLINE void gemvVnni(const MatmulInt8Job &job, const int8_t *acts,
                               size_t n0, size_t n1) {
  size_t n = n0;
  for (; n + kVnniRows <= n1; n += kVnniRows)
    gemvRowsVnni<Int4, kVnniRows>(job, acts, n);
  for (; n < n1; ++n)
    gemvRowsVnni<Int4, 1>(job, acts, n);
}

/// Activation rows per GEMM pass: their partials stay in registers.
constexpr size_t kVnniGemmRows = 4;

/// Weight rows [n, n + N) against activation rows [r0, r0 + M): each
/// block's weights are decoded once for the M rows, and each block of
/// activations is loaded once for the N rows (a zmm load a cycle is the
/// limit on Zen 4 otherwise). N * M partials stay in registers.
template <bool Int4, size_t N, size_t M>
PCCX_VNNI_INLINE void gemmRowsVnni(const MatmulInt8Job &job,
                                   const int8_t *acts, size_t n, size_t r0) {
  constexpr size_t blockBytes =
      (Int4 ? kGroupBytes4 : kGroup) * kGroupsPerBlock;
  const size_t blocks = blocksOf(job), full = fullBlocksOf(job);
  const uint8_t *row = job.rows + n * job.rowStride;
  __m512 p[N][M];
  for (size_t i = 0; i < N; ++i)
    for (size_t r = 0; r < M; ++r)
      p[i][r] = _mm512_setzero_ps();
  for (size_t b = 0; b < blocks; ++b) {
    __m512i u[N][2];
    for (size_t i = 0; i < N; ++i) {
      const uint8_t *rowI = row + i * job.rowStride;
      if (b < full) {
        const uint8_t *w = rowI + blockBytes * b;
        for (size_t line = 0; line < blockBytes; line += 64)
          _mm_prefetch(reinterpret_cast<const char *>(w) +
                           kPrefetchAheadBytes + line,
                       _MM_HINT_T0);
        u[i][0] = fullHalfBlockVnni<Int4>(w);
        u[i][1] = fullHalfBlockVnni<Int4>(w + blockBytes / 2);
      } else {
        blockWeightsVnni(job, rowI, b, u[i]);
      }
    }
    for (size_t r = 0; r < M; ++r) {
      const int8_t *a = acts + ((r0 + r) * blocks + b) * kActivationBlockBytes;
      const __m512i start = _mm512_loadu_si512(a),
                    q0 = _mm512_loadu_si512(a + 64),
                    q1 = _mm512_loadu_si512(a + 128);
      const __m512 s = _mm512_set1_ps(job.blockScales[(r0 + r) * blocks + b]);
      for (size_t i = 0; i < N; ++i) {
        const __m512i acc = _mm512_dpbusd_epi32(
            _mm512_dpbusd_epi32(start, u[i][0], q0), u[i][1], q1);
        p[i][r] = _mm512_add_ps(p[i][r],
                                _mm512_mul_ps(_mm512_cvtepi32_ps(acc), s));
      }
    }
  }
  for (size_t i = 0; i < N; ++i)
    for (size_t r = 0; r < M; ++r)
      job.out[(r0 + r) * job.n + n + i] = finishVnni(job, p[i][r], n + i);
}

/// Weight rows [n, n1) against activation rows [r0, r0 + M), N at a time.
template <bool Int4, size_t N, size_t M>
PCCX_VNNI_INLINE void gemmChunkVnni(const MatmulInt8Job &job,
                                    const int8_t *acts, size_t n, size_t n1,
                                    size_t r0) {
  if (n + N <= n1)
    gemmRowsVnni<Int4, N, M>(job, acts, n, r0);
  else
    for (; n < n1; ++n)
      gemmRowsVnni<Int4, 1, M>(job, acts, n, r0);
}

/// Four weight rows per pass (the rest one by one) against chunks of up to
/// four activation rows: 16 partials in registers, and the chunks of a
/// pass reuse its weights from L1.
constexpr size_t kVnniGemmWeightRows = 4;

template <bool Int4>
PCCX_VNNI_INLINE void gemmVnni(const MatmulInt8Job &job, const int8_t *acts,
                               size_t n0, size_t n1) {
  constexpr size_t N = kVnniGemmWeightRows;
  for (size_t n = n0; n < n1; n += N)
    for (size_t r0 = 0; r0 < job.m; r0 += kVnniGemmRows) {
      const size_t end = std::min(n1, n + N);
      switch (std::min(kVnniGemmRows, job.m - r0)) {
      case 1:
        gemmChunkVnni<Int4, N, 1>(job, acts, n, end, r0);
        break;
      case 2:
        gemmChunkVnni<Int4, N, 2>(job, acts, n, end, r0);
        break;
      case 3:
        gemmChunkVnni<Int4, N, 3>(job, acts, n, end, r0);
        break;
      default:
        gemmChunkVnni<Int4, N, kVnniGemmRows>(job, acts, n, end, r0);
        break;
      }
    }
}

PCCX_VNNI void featuresVnni(const MatmulInt8Job &job, size_t n0, size_t n1) {
  std::vector<int8_t> acts;
  activationBlocksVnni(job, acts);
  if (job.m == 1) {
    if (job.int4)
      gemvVnni<true>(job, acts.data(), n0, n1);
    else
      gemvVnni<false>(job, acts.data(), n0, n1);
  } else if (job.int4) {
    gemmVnni<true>(job, acts.data(), n0, n1);
  } else {
    gemmVnni<false>(job, acts.data(), n0, n1);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif // PCCX_INT8_HAVE_X86

//===----------------------------------------------------------------------===//
// NEON: the Cortex-A53 (ARMv8.0) has no dot-product instructions: 16
// products by smull/smull2, their pairs summed to 16 bits (addp; two
// products fit) and accumulated pairwise into 32-bit lanes (sadalp): lane l
// sums products 4l .. 4l+3. ARMv8.2 cores with sdot (checked at run time)
// use it instead. A block's partials are four registers: the 16 codes at
// element 16c of the block go to register c mod 4.
//===----------------------------------------------------------------------===//

#ifdef PCCX_INT8_HAVE_NEON

/// Group `g` in kernel order: two registers of 16 codes. The format is a
/// template parameter so that the block loop has no branch on it (the A53
/// is in order).
template <bool Int4>
inline void weightGroupNeon(const MatmulInt8Job &job, const uint8_t *row,
                            size_t g, int8x16_t w[2]) {
  if (Int4) {
    const uint8x16_t bytes = vld1q_u8(row + kGroupBytes4 * g);
    // Low nibbles: shifted up then arithmetically down; high: shifted down.
    w[0] = vshrq_n_s8(vreinterpretq_s8_u8(vshlq_n_u8(bytes, 4)), 4);
    w[1] = vshrq_n_s8(vreinterpretq_s8_u8(bytes), 4);
    return;
  }
  const uint8_t *p = row + kGroup * g;
  w[0] = vreinterpretq_s8_u8(vld1q_u8(p));
  w[1] = groupBytes(job, g) < kGroup ? vdupq_n_s8(0)
                                     : vreinterpretq_s8_u8(vld1q_u8(p + 16));
}

/// acc lane l += products 4l .. 4l+3 of w * q.
inline int32x4_t dotNeon(int32x4_t acc, int8x16_t w, int8x16_t q) {
  const int16x8_t pairs = vpaddq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(q)),
                                     vmull_high_s8(w, q));
  return vpadalq_s16(acc, pairs);
}

#if defined(__GNUC__) || defined(__clang__)
#define PCCX_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#else
#define PCCX_DOTPROD
#endif

/// The same by sdot.
PCCX_DOTPROD inline int32x4_t dotNeonDot(int32x4_t acc, int8x16_t w,
                                         int8x16_t q) {
  return vdotq_s32(acc, w, q);
}

template <bool Dot>
inline int32x4_t dotOf(int32x4_t acc, int8x16_t w, int8x16_t q) {
  return Dot ? dotNeonDot(acc, w, q) : dotNeon(acc, w, q);
}

/// p[c] = p[c] + float(acc[c]) * s, two roundings.
inline void foldNeon(float32x4_t p[4], const int32x4_t acc[4], float s) {
  const float32x4_t scale = vdupq_n_f32(s);
  for (size_t c = 0; c < 4; ++c)
    p[c] = vaddq_f32(p[c], vmulq_f32(vcvtq_f32_s32(acc[c]), scale));
}

inline float finishNeon(const float32x4_t p[4], const float *scales,
                        size_t n) {
  float out[kInt8Partials];
  for (size_t c = 0; c < 4; ++c)
    vst1q_f32(out + 4 * c, p[c]);
  return finish(out, scales, n);
}

/// Block `b` of R weight rows (from `row`, rowStride apart) against one
/// activation row's codes `q` (the block's) and scale `s`: row i's
/// partials p[i] take it in order. (bench/a53-loops.cpp analyses this
/// step on the A53.)
template <bool Dot, bool Int4, size_t R>
inline void rowsBlockNeon(const MatmulInt8Job &job, const uint8_t *row,
                          size_t b, const int8_t *q, float s,
                          float32x4_t p[R][4]) {
  int32x4_t acc[R][4];
  for (size_t i = 0; i < R; ++i)
    for (size_t c = 0; c < 4; ++c)
      acc[i][c] = vdupq_n_s32(0);
  for (size_t j = 0; j < kGroupsPerBlock; ++j) {
    const size_t g = kGroupsPerBlock * b + j;
    if (g >= job.groups)
      break;
    const int8x16_t q0 = vld1q_s8(q + kGroup * j),
                    q1 = vld1q_s8(q + kGroup * j + 16);
    const size_t c = 2 * (j % 2);
    for (size_t i = 0; i < R; ++i) {
      int8x16_t w[2];
      weightGroupNeon<Int4>(job, row + i * job.rowStride, g, w);
      acc[i][c] = dotOf<Dot>(acc[i][c], w[0], q0);
      acc[i][c + 1] = dotOf<Dot>(acc[i][c + 1], w[1], q1);
    }
  }
  for (size_t i = 0; i < R; ++i)
    foldNeon(p[i], acc[i], s);
}

/// Two weight rows per pass when there is one activation row: they share
/// its codes, and their independent chains keep an in-order core busy
/// (four would not fit the 32 registers).
constexpr size_t kNeonRows = 2;

template <bool Dot, bool Int4>
inline void featuresNeonOf(const MatmulInt8Job &job, size_t n0, size_t n1) {
  const size_t blocks = blocksOf(job);
  const size_t blockBytes = (Int4 ? kGroupBytes4 : kGroup) * kGroupsPerBlock;
  size_t n = n0;
  if (job.m == 1) {
    for (; n + kNeonRows <= n1; n += kNeonRows) {
      const uint8_t *row = job.rows + n * job.rowStride;
      float32x4_t p[kNeonRows][4];
      for (size_t i = 0; i < kNeonRows; ++i)
        for (size_t c = 0; c < 4; ++c)
          p[i][c] = vdupq_n_f32(0.0f);
      for (size_t b = 0; b < blocks; ++b) {
        // The same block of the next pass's rows.
        for (size_t i = 0; i < kNeonRows; ++i)
          __builtin_prefetch(row + (kNeonRows + i) * job.rowStride +
                             blockBytes * b);
        rowsBlockNeon<Dot, Int4, kNeonRows>(job, row, b,
                                            job.codes + kInt8Block * b,
                                            job.blockScales[b], p);
      }
      for (size_t i = 0; i < kNeonRows; ++i)
        job.out[n + i] = finishNeon(p[i], job.scales, n + i);
    }
  }
  // GEMM (and a GEMV's last row): each block's weights are decoded once for
  // every activation row.
  std::vector<float32x4_t> part(4 * job.m);
  for (; n < n1; ++n) {
    const uint8_t *row = job.rows + n * job.rowStride;
    std::fill(part.begin(), part.end(), vdupq_n_f32(0.0f));
    for (size_t b = 0; b < blocks; ++b) {
      int8x16_t w[kGroupsPerBlock][2];
      const size_t groups =
          std::min(kGroupsPerBlock, job.groups - std::min(job.groups,
                                                          kGroupsPerBlock * b));
      for (size_t j = 0; j < groups; ++j)
        weightGroupNeon<Int4>(job, row, kGroupsPerBlock * b + j, w[j]);
      for (size_t r = 0; r < job.m; ++r) {
        const int8_t *q = job.codes + r * job.codesStride + kInt8Block * b;
        int32x4_t acc[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0),
                            vdupq_n_s32(0)};
        for (size_t j = 0; j < groups; ++j) {
          const size_t c = 2 * (j % 2);
          acc[c] = dotOf<Dot>(acc[c], w[j][0], vld1q_s8(q + kGroup * j));
          acc[c + 1] =
              dotOf<Dot>(acc[c + 1], w[j][1], vld1q_s8(q + kGroup * j + 16));
        }
        foldNeon(&part[4 * r], acc, job.blockScales[r * blocks + b]);
      }
    }
    for (size_t r = 0; r < job.m; ++r)
      job.out[r * job.n + n] = finishNeon(&part[4 * r], job.scales, n);
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
#ifdef PCCX_INT8_HAVE_X86
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
  case Int8Isa::Avx512Vnni:
#ifdef PCCX_INT8_HAVE_X86
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
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
  static const Int8Isa best = [] {
    for (Int8Isa isa : {Int8Isa::Avx512Vnni, Int8Isa::Avx2, Int8Isa::NeonDot,
                        Int8Isa::Neon})
      if (int8IsaAvailable(isa))
        return isa;
    return Int8Isa::Scalar;
  }();
  return best;
}

const char *int8IsaName(Int8Isa isa) {
  switch (isa) {
  case Int8Isa::Avx2:
    return "avx2";
  case Int8Isa::Avx512Vnni:
    return "avx512-vnni";
  case Int8Isa::Neon:
    return "neon";
  case Int8Isa::NeonDot:
    return "neon-dotprod";
  case Int8Isa::Scalar:
    break;
  }
  return "scalar";
}

const char *int8IsaNames() {
  return "scalar, avx2, avx512-vnni, neon or neon-dotprod";
}

bool parseInt8Isa(const std::string &name, Int8Isa *isa) {
  return parseEnumName(name,
                       {Int8Isa::Scalar, Int8Isa::Avx2, Int8Isa::Avx512Vnni,
                        Int8Isa::Neon, Int8Isa::NeonDot},
                       int8IsaName, isa);
}

void quantizeActivationsInt8(const float *x, size_t k, size_t stride,
                             int8_t *codes, float *blockScales,
                             int32_t *codeSums) {
  for (size_t b = 0; b < stride; b += kInt8Block) {
    const size_t have = k > b ? std::min(kInt8Block, k - b) : 0;
    // max |x| on the bit patterns: for non-NaN floats their order is the
    // magnitudes' order, an infinity is 0x7f800000 and a NaN above it (an
    // integer reduction, which the compiler vectorizes).
    uint32_t amaxBits = 0;
    for (size_t i = 0; i < have; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &x[b + i], 4);
      amaxBits = std::max(amaxBits, bits & 0x7fffffffu);
    }
    const bool finite = amaxBits < 0x7f800000u;
    float amax;
    std::memcpy(&amax, &amaxBits, 4);
    // A NaN or an infinity makes the block's scale NaN: every sum it joins
    // is NaN, as in the other numerics, and the step is refused.
    const float scale = finite ? amax / 127.0f : NAN;
    blockScales[b / kInt8Block] = scale;
    int8_t *q = codes + b;
    const size_t coded = finite && scale > 0.0f ? have : 0;
    for (size_t i = 0; i < coded; ++i) {
      // Round half away from zero: |v| <= 127 (plus rounding), so the
      // conversion truncates exactly and v - t is exact.
      const float v = x[b + i] / scale;
      const int t = int(v);
      const float d = v - float(t);
      int r = t + (d >= 0.5f ? 1 : 0) - (d <= -0.5f ? 1 : 0);
      r = r > 127 ? 127 : r < -127 ? -127 : r;
      q[i] = int8_t(r);
    }
    std::fill(q + coded, q + kInt8Block, int8_t(0));
    int32_t *sums = codeSums + b / kInt8Block * kInt8Partials;
    for (size_t j = 0; j < kInt8Partials; ++j)
      sums[j] = int32_t(q[4 * j]) + q[4 * j + 1] + q[4 * j + 2] + q[4 * j + 3] +
                q[64 + 4 * j] + q[64 + 4 * j + 1] + q[64 + 4 * j + 2] +
                q[64 + 4 * j + 3];
  }
}

void matmulInt8Features(const MatmulInt8Job &job, size_t n0, size_t n1,
                        Int8Isa isa) {
  switch (isa) {
#ifdef PCCX_INT8_HAVE_X86
  case Int8Isa::Avx512Vnni:
    featuresVnni(job, n0, n1);
    return;
  case Int8Isa::Avx2:
    featuresAvx2(job, n0, n1);
    return;
#endif
#ifdef PCCX_INT8_HAVE_NEON
  case Int8Isa::NeonDot:
    featuresNeonDot(job, n0, n1);
    return;
  case Int8Isa::Neon:
    featuresNeon(job, n0, n1);
    return;
#endif
  default:
    featuresScalar(job, n0, n1);
    return;
  }
}

} // namespace pccx::sim
