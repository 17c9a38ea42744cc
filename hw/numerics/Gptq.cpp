//===- Gptq.cpp - error-compensating INT4 rounding ------------------------===//

#include "hw/numerics/Gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pccx::hw {

namespace {

/// In-place lower Cholesky factor of an n x n symmetric matrix (the upper
/// triangle is zeroed). False if the matrix is not positive definite.
bool choleskyLower(std::vector<double> &a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[size_t(j * n + j)];
    for (int64_t k = 0; k < j; ++k)
      d -= a[size_t(j * n + k)] * a[size_t(j * n + k)];
    if (!(d > 0))
      return false;
    const double root = std::sqrt(d);
    a[size_t(j * n + j)] = root;
    for (int64_t i = j + 1; i < n; ++i) {
      double v = a[size_t(i * n + j)];
      for (int64_t k = 0; k < j; ++k)
        v -= a[size_t(i * n + k)] * a[size_t(j * n + k)];
      a[size_t(i * n + j)] = v / root;
    }
    for (int64_t k = j + 1; k < n; ++k)
      a[size_t(j * n + k)] = 0;
  }
  return true;
}

/// The inverse of a lower-triangular matrix, in place.
void invertLower(std::vector<double> &l, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    l[size_t(j * n + j)] = 1.0 / l[size_t(j * n + j)];
    for (int64_t i = j + 1; i < n; ++i) {
      double v = 0;
      for (int64_t k = j; k < i; ++k)
        v += l[size_t(i * n + k)] * l[size_t(k * n + j)];
      l[size_t(i * n + j)] = -v / l[size_t(i * n + i)];
    }
  }
}

int roundCode(double x) {
  // std::round rounds halves away from zero, as quantizeRowInt4 does.
  return int(std::min(7.0, std::max(-8.0, std::round(x))));
}

} // namespace

void accumulateGram(const float *x, int64_t count, InputGram *gram) {
  const int64_t n = gram->columns;
  gram->values.resize(size_t(n * n), 0.0);
  for (int64_t t = 0; t < count; ++t) {
    const float *v = x + t * n;
    for (int64_t i = 0; i < n; ++i) {
      const double vi = v[i];
      if (vi == 0)
        continue;
      double *row = gram->values.data() + i * n;
      for (int64_t j = 0; j < n; ++j)
        row[j] += vi * double(v[j]);
    }
  }
  gram->samples += count;
}

bool makeGptqFactor(const double *gram, int64_t n, GptqFactor *factor,
                    std::string *error) {
  factor->n = n;
  std::vector<double> h(gram, gram + n * n);
  double meanDiagonal = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (!(h[size_t(j * n + j)] > 0)) {
      // An input that never moved: its weight only matters to itself.
      for (int64_t k = 0; k < n; ++k)
        h[size_t(j * n + k)] = h[size_t(k * n + j)] = 0;
      h[size_t(j * n + j)] = 1;
    }
    meanDiagonal += h[size_t(j * n + j)];
  }
  meanDiagonal /= double(std::max<int64_t>(1, n));
  factor->order.resize(size_t(n));
  std::iota(factor->order.begin(), factor->order.end(), 0);
  std::stable_sort(factor->order.begin(), factor->order.end(),
                   [&](int32_t a, int32_t b) {
                     return h[size_t(a * n + a)] > h[size_t(b * n + b)];
                   });
  double damping = kGptqDamping;
  for (int attempt = 0; attempt < 6; ++attempt, damping *= 10) {
    factor->hessian = h;
    for (int64_t j = 0; j < n; ++j)
      factor->hessian[size_t(j * n + j)] += damping * meanDiagonal;
    // The damped H with rows and columns in rounding order.
    std::vector<double> l(size_t(n * n));
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = 0; b < n; ++b)
        l[size_t(a * n + b)] = factor->hessian[size_t(
            factor->order[size_t(a)] * n + factor->order[size_t(b)])];
    if (!choleskyLower(l, n))
      continue;
    // H^-1 = L^-T L^-1, then its own Cholesky factor.
    invertLower(l, n);
    std::vector<double> inverse(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        double v = 0;
        for (int64_t k = i; k < n; ++k)
          v += l[size_t(k * n + i)] * l[size_t(k * n + j)];
        inverse[size_t(i * n + j)] = inverse[size_t(j * n + i)] = v;
      }
    if (!choleskyLower(inverse, n))
      continue;
    factor->inverseFactor.assign(size_t(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j)
        factor->inverseFactor[size_t(j * n + i)] = inverse[size_t(i * n + j)];
    return true;
  }
  *error = "the calibration inputs' Gram matrix (" + std::to_string(n) + " x " +
           std::to_string(n) + ") cannot be factored";
  return false;
}

double gptqOutputError(const float *row, size_t n, float scale, const int8_t *q,
                       const GptqFactor &factor) {
  std::vector<double> e(n);
  for (size_t i = 0; i < n; ++i)
    e[i] = double(row[i]) - double(scale) * double(q[i]);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double *h = factor.hessian.data() + i * n;
    double v = 0;
    for (size_t j = 0; j < n; ++j)
      v += h[j] * e[j];
    total += e[i] * v;
  }
  return total;
}

float quantizeRowInt4Gptq(const float *row, size_t n, ScaleRule rule,
                          const GptqFactor &factor, int8_t *q) {
  std::vector<int8_t> nearest(n);
  const float scale = rule == ScaleRule::Search
                          ? quantizeRowInt4Search(row, n, nearest.data())
                          : quantizeRowInt4(row, n, nearest.data());
  if (scale == 0 || int64_t(n) != factor.n) {
    std::copy(nearest.begin(), nearest.end(), q);
    return scale;
  }
  // Column by column in factor.order: round, then move the rounding error,
  // weighted by the rows of U, onto the columns still to come.
  std::vector<double> w(n);
  for (size_t a = 0; a < n; ++a)
    w[a] = row[factor.order[a]];
  std::vector<int8_t> rounded(n);
  const double *u = factor.inverseFactor.data();
  for (size_t a = 0; a < n; ++a) {
    const int code = roundCode(w[a] / double(scale));
    rounded[size_t(factor.order[a])] = int8_t(code);
    const double err = (w[a] - double(scale) * code) / u[a * n + a];
    for (size_t b = a + 1; b < n; ++b)
      w[b] -= err * u[a * n + b];
  }
  // The scale with the least output error for these codes:
  // (w^T H q) / (q^T H q).
  double wHq = 0, qHq = 0;
  for (size_t i = 0; i < n; ++i) {
    const double *h = factor.hessian.data() + i * n;
    double hq = 0;
    for (size_t j = 0; j < n; ++j)
      hq += h[j] * double(rounded[j]);
    wHq += double(row[i]) * hq;
    qHq += double(rounded[i]) * hq;
  }
  float refit = scale;
  if (qHq > 0 && wHq > 0)
    refit = float(wHq / qHq);
  if (gptqOutputError(row, n, refit, rounded.data(), factor) <
      gptqOutputError(row, n, scale, nearest.data(), factor)) {
    std::copy(rounded.begin(), rounded.end(), q);
    return refit;
  }
  std::copy(nearest.begin(), nearest.end(), q);
  return scale;
}

} // namespace pccx::hw
