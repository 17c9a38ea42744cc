//===- Elementary.h - exp, log, tanh, sin, cos, pow of the runtime -*- C++ -*-===//
//
// The elementary functions behind every result the runtime computes from a
// bundle (host kernels, the simulator's SFU, sampling, perplexity). The C
// library's versions differ between platforms (glibc's tanhf on x86-64 and
// on aarch64 disagree in the last bit for some inputs), so a bundle would
// give different logits on the board than on a workstation. These are
// evaluated with IEEE double additions, subtractions, multiplications and
// divisions only, plus operations whose result is exact (scaling by powers
// of two, rounding to an integer, fmod), in a fixed order and compiled
// without FMA contraction: every platform with IEEE double arithmetic gets
// the same bits.
//
// Accuracy (test/unit/numerics/ElementaryTests.cpp measures it):
//  - exp, log, sin, cos, tanh: below 1 ulp over their domains; sin and cos
//    for |x| < 823 550 (2^19 pi/2). Larger sin/cos arguments are reduced
//    modulo the double nearest 2 pi, exactly but with that constant's error
//    (about 2.4e-16 x absolutely): deterministic, less accurate.
//  - pow(x, y) for x >= 0: below 1 ulp while |y ln x| <= 709 (every finite
//    result); the logarithm is carried in double-double.
//  - Results that underflow are subnormal or zero, those that overflow are
//    infinite; NaN in, NaN out.
// Every NaN these functions return is the canonical quiet NaN (positive,
// payload zero: 0x7FF8000000000000, and 0x7FC00000 after narrowing), never
// the input's payload, so no platform's NaN propagation shows.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_HW_NUMERICS_ELEMENTARY_H
#define PCCX_HW_NUMERICS_ELEMENTARY_H

#include <cstdint>

namespace pccx::hw {

/// e^x.
double exp(double x);
/// The natural logarithm: -inf at +-0, NaN below 0.
double log(double x);
/// The hyperbolic tangent, odd, exactly +-1 for |x| > 22.
double tanh(double x);
/// sin x and cos x, x in radians.
double sin(double x);
double cos(double x);
/// x^y for a non-negative base: pow(x, 0) = pow(1, y) = 1 (NaN included);
/// pow(+-0, y) = +0 for y > 0 and +inf for y < 0; pow(+inf, y) = +inf for
/// y > 0 and +0 for y < 0; y = +-inf gives 0, 1 or inf by whether x < 1;
/// a negative base gives NaN (the runtime raises only positive constants).
double pow(double x, double y);

/// The fp32 forms the runtime's float code uses: the double function of the
/// widened argument, rounded once to fp32.
float expf(float x);
float tanhf(float x);
float sinf(float x);
float cosf(float x);

/// Scores over a row of logits, in double through the functions above, so
/// that perplexity and sensitivity figures are the same on every machine.
/// -log softmax(logits)[target].
double negativeLogLikelihood(const float *logits, int64_t vocab,
                             int32_t target);
/// KL(softmax(reference) || softmax(model)) in nats.
double klDivergence(const float *reference, const float *model, int64_t vocab);

} // namespace pccx::hw

#endif // PCCX_HW_NUMERICS_ELEMENTARY_H
