//===- NonFinite.cpp - NaN and infinite weights in a checkpoint -----------===//

#include "compiler/import/NonFinite.h"

#include <cstring>

namespace pccx::import {

namespace {

/// Counts elements whose exponent bits are all ones: a zero mantissa is an
/// infinity, any other a NaN. Elements may be unaligned, hence memcpy.
template <typename Bits>
NonFiniteCount countSpecial(const uint8_t *data, uint64_t count, Bits exponent,
                            Bits mantissa) {
  NonFiniteCount out;
  for (uint64_t i = 0; i < count; ++i) {
    Bits v;
    std::memcpy(&v, data + i * sizeof(Bits), sizeof(Bits));
    if ((v & exponent) != exponent)
      continue;
    if (v & mantissa)
      ++out.nan;
    else
      ++out.inf;
  }
  return out;
}

} // namespace

NonFiniteCount countNonFinite(const TensorView &tensor) {
  const uint64_t count = tensor.bytes / dtypeSize(tensor.dtype);
  switch (tensor.dtype) {
  case DType::F32:
    return countSpecial<uint32_t>(tensor.data, count, 0x7f800000u, 0x007fffffu);
  case DType::F16:
    return countSpecial<uint16_t>(tensor.data, count, 0x7c00u, 0x03ffu);
  case DType::BF16:
    return countSpecial<uint16_t>(tensor.data, count, 0x7f80u, 0x007fu);
  }
  return {};
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
