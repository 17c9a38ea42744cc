//===- a53-loops.cpp - the GEMV inner loops, marked for llvm-mca ----------===//
//
// bench/a53-estimate.sh compiles this file for aarch64 (GCC, -O3, -mcpu of
// the core) and runs the marked loops through llvm-mca: one iteration is
// one block of 32 INT4 weights (float kernel of Hardware numerics) or four
// weight rows' blocks sharing one block of activation codes (the integer
// kernel's GEMV), the same inline functions the simulator's kernels use.
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
/// The kernel's GEMV pass over four weight rows, one block per iteration.
template <bool Dot>
inline void fourRows(const MatmulInt8Job &job, const uint8_t *row,
                     float *out) {
  float32x4_t p[4][2];
  for (size_t i = 0; i < 4; ++i)
    p[i][0] = p[i][1] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < job.blocks; ++b) {
    asm volatile("# LLVM-MCA-BEGIN integer-numerics-int4-4-rows");
    fourRowsBlockNeon<Dot, true>(job, row, b, p);
    asm volatile("# LLVM-MCA-END");
  }
  for (size_t i = 0; i < 4; ++i) {
    vst1q_f32(out + 8 * i, p[i][0]);
    vst1q_f32(out + 8 * i + 4, p[i][1]);
  }
}
} // namespace

#if defined(PCCX_LOOP_DOT)
extern "C" PCCX_DOTPROD void integerGemvLoop(const MatmulInt8Job &job,
                                             const uint8_t *row, float *out) {
  fourRows<true>(job, row, out);
}
#else
extern "C" void integerGemvLoop(const MatmulInt8Job &job, const uint8_t *row,
                                float *out) {
  fourRows<false>(job, row, out);
}
#endif
#endif
