//===- Sensitivity.h - which tensors carry the INT4 loss --------*- C++ -*-===//
//
// Measures, for every tensor the default policy stores in INT4, how much
// quantizing that tensor alone moves the float reference's next-token
// distribution on calibration text (mean KL divergence from the original
// weights), and chooses which tensors to keep in INT8 within a byte budget:
// the most loss removed per extra byte first. pccx-compile --int8-budget.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_REFERENCE_SENSITIVITY_H
#define PCCX_RUNTIME_REFERENCE_SENSITIVITY_H

#include "runtime/reference/ReferenceCheckpoint.h"

#include <functional>

namespace pccx::reference {

struct TensorSensitivity {
  std::string name;      ///< without the text-decoder prefix
  double meanKl = 0;     ///< nats per calibration token
  int64_t int4Bytes = 0; ///< weight-record bytes in INT4
  int64_t int8Bytes = 0; ///< and in INT8
};

/// `windows` are token sequences (each starting with BOS) of at most
/// `positions` tokens. INT4 follows `int4` (scale rule and group scales;
/// nearest rounding). `progress` (optional) is called after each tensor
/// with (done, total).
bool measureSensitivity(
    const ReferenceCheckpoint &checkpoint,
    const std::vector<std::vector<int32_t>> &windows, int64_t positions,
    hw::QuantScheme int4, std::vector<TensorSensitivity> *result,
    std::string *error,
    const std::function<void(size_t, size_t)> &progress = {});

/// The tensors to keep in INT8: by meanKl per extra byte (ties: name),
/// taken while the extra bytes stay within `budget` (a fraction) of the
/// INT4 bytes of all measured tensors. Returned in name order.
std::vector<std::string>
chooseInt8Tensors(const std::vector<TensorSensitivity> &tensors, double budget);

/// A regular expression matching exactly `names` (dots escaped), for the
/// int8-tensors option; empty for no names.
std::string exactNamesRegex(const std::vector<std::string> &names);

} // namespace pccx::reference

#endif
