//===- NonFinite.cpp - NaN and infinite weights in a checkpoint -----------===//

#include "runtime/import/NonFinite.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstring>
#include <thread>

namespace pccx::import {

namespace {

/// Counts elements whose exponent bits are all ones: a zero mantissa is an
/// infinity, any other a NaN. Elements may be unaligned, hence memcpy; the
/// loop has no branch so that it vectorises.
template <typename Bits>
NonFiniteCount countSpecial(const uint8_t *data, uint64_t count, Bits exponent,
                            Bits mantissa) {
  uint64_t special = 0, nan = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Bits v;
    std::memcpy(&v, data + i * sizeof(Bits), sizeof(Bits));
    const bool isSpecial = (v & exponent) == exponent;
    special += isSpecial;
    nan += isSpecial & ((v & mantissa) != 0);
  }
  NonFiniteCount out;
  out.nan = nan;
  out.inf = special - nan;
  return out;
}

NonFiniteCount countElements(const TensorView &tensor, const uint8_t *data,
                             uint64_t count) {
  switch (tensor.dtype) {
  case DType::F32:
    return countSpecial<uint32_t>(data, count, 0x7f800000u, 0x007fffffu);
  case DType::F16:
    return countSpecial<uint16_t>(data, count, 0x7c00u, 0x03ffu);
  case DType::BF16:
    return countSpecial<uint16_t>(data, count, 0x7f80u, 0x007fu);
  }
  return {};
}

/// Elements [first, first + count) in chunks; each chunk's whole pages are
/// dropped from this process once counted (they stay in the page cache), so
/// scanning a 14 GB checkpoint does not make it resident.
NonFiniteCount countRange(const TensorView &tensor, uint64_t first,
                          uint64_t count) {
  if (tensor.sliced()) {
    // A view of part of a stored tensor: its elements, converted (a NaN or
    // infinity stays one in float).
    NonFiniteCount total;
    std::vector<float> buf(size_t(1) << 16);
    std::string error;
    for (uint64_t i = first; i < first + count; i += buf.size()) {
      const uint64_t n = std::min<uint64_t>(buf.size(), first + count - i);
      if (!convertToFloat(tensor, i, n, buf.data(), &error))
        break; // in range by construction
      for (uint64_t k = 0; k < n; ++k) {
        total.nan += std::isnan(buf[k]);
        total.inf += std::isinf(buf[k]);
      }
    }
    return total;
  }
  const uint64_t size = dtypeSize(tensor.dtype);
  const uint64_t chunk = (uint64_t(8) << 20) / size;
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  NonFiniteCount total;
  for (uint64_t i = first; i < first + count; i += chunk) {
    const uint64_t n = std::min(chunk, first + count - i);
    const uint8_t *data = tensor.data + i * size;
    NonFiniteCount c = countElements(tensor, data, n);
    total.nan += c.nan;
    total.inf += c.inf;
    uintptr_t begin = (uintptr_t(data) + page - 1) & ~(page - 1);
    uintptr_t end = uintptr_t(data + n * size) & ~(page - 1);
    if (end > begin)
      ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
  return total;
}

/// Below this many bytes a tensor is scanned by one thread.
constexpr uint64_t kSplitBytes = uint64_t(32) << 20;

} // namespace

NonFiniteCount countNonFinite(const TensorView &tensor) {
  const uint64_t count = tensor.bytes / dtypeSize(tensor.dtype);
  unsigned parts = std::max(1u, std::thread::hardware_concurrency());
  if (tensor.bytes < kSplitBytes)
    parts = 1;
  // Counts add up the same however the range is split.
  const uint64_t share = (count + parts - 1) / parts;
  std::vector<NonFiniteCount> counts(parts);
  std::vector<std::thread> pool;
  unsigned next = 1; // the calling thread takes part 0
  try {
    for (; next < parts; ++next) {
      const uint64_t first = std::min(count, next * share);
      pool.emplace_back([&, next, first] {
        counts[next] =
            countRange(tensor, first, std::min(share, count - first));
      });
    }
  } catch (...) {
    // No more threads: the rest is counted here.
    for (; next < parts; ++next) {
      const uint64_t first = std::min(count, next * share);
      counts[next] = countRange(tensor, first, std::min(share, count - first));
    }
  }
  counts[0] = countRange(tensor, 0, std::min(share, count));
  for (std::thread &t : pool)
    t.join();
  NonFiniteCount total;
  for (const NonFiniteCount &c : counts) {
    total.nan += c.nan;
    total.inf += c.inf;
  }
  return total;
}

std::vector<NonFiniteTensor>
findNonFiniteTensors(const Checkpoint &checkpoint) {
  std::vector<NonFiniteTensor> out;
  for (const std::string &name : checkpoint.names()) {
    const TensorView *t = checkpoint.find(name);
    if (!t)
      continue;
    NonFiniteCount c = countNonFinite(*t);
    if (c.total())
      out.push_back({name, c});
  }
  return out;
}

std::string describeNonFinite(const NonFiniteTensor &tensor) {
  return tensor.name + " (" + std::to_string(tensor.count.nan) + " NaN, " +
         std::to_string(tensor.count.inf) + " infinite)";
}

} // namespace pccx::import
