//===- NonFinite.h - NaN and infinite weights in a checkpoint ---*- C++ -*-===//
//
// A checkpoint with NaN or infinite weights compiles into a bundle whose
// logits are garbage; the compiler finds them up front and names them.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_NONFINITE_H
#define PCCX_RUNTIME_IMPORT_NONFINITE_H

#include "runtime/import/Safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pccx::import {

struct NonFiniteCount {
  uint64_t nan = 0, inf = 0;
  uint64_t total() const { return nan + inf; }
};

/// NaN and infinite elements of one tensor (read from the bit patterns, so
/// nothing is converted and no floating-point exception can occur).
NonFiniteCount countNonFinite(const TensorView &tensor);

struct NonFiniteTensor {
  std::string name;
  NonFiniteCount count;
};

/// Every tensor of `checkpoint` holding NaN or infinite values, by name.
std::vector<NonFiniteTensor> findNonFiniteTensors(const Checkpoint &checkpoint);

/// "NAME (N NaN, M infinite)" for a message.
std::string describeNonFinite(const NonFiniteTensor &tensor);

} // namespace pccx::import

#endif
