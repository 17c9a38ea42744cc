//===- a53-loops.cpp - the GEMV inner loops, marked for llvm-mca ----------===//
//
// bench/a53-estimate.sh compiles this file for aarch64 (GCC, -O3, -mcpu of
// the core) and runs the marked loops through llvm-mca: one iteration is
// one block of 32 INT4 weights (float kernel of Hardware numerics) or two
// weight rows' blocks of 128 sharing one block of activation codes (the
// integer kernel's GEMV: eight groups of 32), the same inline functions the
// simulator's kernels use.
// Not part of the build.
//
//===----------------------------------------------------------------------===//

#if defined(PCCX_LOOP_FLOAT)
#include "runtime/sim/MatmulKernels.cpp"

extern "C" void floatGemvLoop(const uint8_t *row, const float *x, size_t blocks,
                              float *out) {
  using namespace pccx::sim;
  float32x4_t w[8], acc[8];
  for (int i = 0; i < 8; ++i)
    acc[i] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < blocks; ++b) {
    asm volatile("# LLVM-MCA-BEGIN hardware-numerics-int4");
    decodeInt4Neon(row + 16 * b, w);
    accumulateNeon(acc, w, x + 32 * b);
    asm volatile("# LLVM-MCA-END");
  }
  for (int i = 0; i < 8; ++i)
    vst1q_f32(out + 4 * i, acc[i]);
}
#else
#include "runtime/sim/MatmulInt8Kernels.cpp"

namespace {
using namespace pccx::sim;
/// The kernel's GEMV pass over kNeonRows weight rows, one block of 128
/// weights per row per iteration.
template <bool Dot>
inline void rowsPass(const MatmulInt8Job &job, const uint8_t *row,
                     float *out) {
  float32x4_t p[kNeonRows][4];
  for (size_t i = 0; i < kNeonRows; ++i)
    for (size_t c = 0; c < 4; ++c)
      p[i][c] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < blocksOf(job); ++b) {
    asm volatile("# LLVM-MCA-BEGIN integer-numerics-int4-rows");
    rowsBlockNeon<Dot, true, kNeonRows>(job, row, b,
                                        job.codes + kInt8Block * b,
                                        job.blockScales[b], p);
    asm volatile("# LLVM-MCA-END");
  }
  for (size_t i = 0; i < kNeonRows; ++i)
    for (size_t c = 0; c < 4; ++c)
      vst1q_f32(out + 16 * i + 4 * c, p[i][c]);
}
} // namespace

#if defined(PCCX_LOOP_DOT)
extern "C" PCCX_DOTPROD void integerGemvLoop(const MatmulInt8Job &job,
                                             const uint8_t *row, float *out) {
  rowsPass<true>(job, row, out);
}
#else
extern "C" void integerGemvLoop(const MatmulInt8Job &job, const uint8_t *row,
                                float *out) {
  rowsPass<false>(job, row, out);
}
#endif
#endif
