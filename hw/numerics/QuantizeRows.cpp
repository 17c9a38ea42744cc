//===- QuantizeRows.cpp - quantize and pack rows on threads ---------------===//

#include "hw/numerics/QuantizeRows.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace pccx::hw {

namespace {
/// Below this many weights per thread, starting a thread costs more than it
/// saves.
constexpr int64_t kMinWeightsPerThread = int64_t(1) << 15;

void quantizeRange(QuantScheme scheme, const float *in, int64_t begin,
                   int64_t end, int64_t cols, float *scales, uint8_t *out,
                   size_t stride) {
  std::vector<int8_t> codes(static_cast<size_t>(cols));
  for (int64_t r = begin; r < end; ++r) {
    scales[r] = quantizeRow(scheme, in + r * cols, size_t(cols), codes.data());
    packRow(scheme.format, codes.data(), size_t(cols),
            out + size_t(r) * stride);
  }
}
} // namespace

unsigned resolveThreads(unsigned threads) {
  return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

void quantizeAndPackRows(QuantScheme scheme, const float *in, int64_t rows,
                         int64_t cols, float *scales, uint8_t *out,
                         size_t stride, unsigned threads) {
  int64_t parts = std::min<int64_t>(
      resolveThreads(threads),
      std::max<int64_t>(1, rows * cols / kMinWeightsPerThread));
  parts = std::max<int64_t>(1, std::min(parts, rows));
  const int64_t chunk = (rows + parts - 1) / parts;
  std::vector<std::thread> pool;
  int64_t next = chunk; // the calling thread takes [0, chunk)
  try {
    for (; next < rows; next += chunk)
      pool.emplace_back(quantizeRange, scheme, in, next,
                        std::min(rows, next + chunk), cols, scales, out,
                        stride);
  } catch (...) {
    // No more threads: the rest is done here.
    quantizeRange(scheme, in, next, rows, cols, scales, out, stride);
  }
  quantizeRange(scheme, in, 0, std::min(rows, chunk), cols, scales, out,
                stride);
  for (std::thread &t : pool)
    t.join();
}

} // namespace pccx::hw
