//===- AttrJson.h - attributes as manifest JSON -----------------*- C++ -*-===//

#ifndef PCCX_COMPILER_EMIT_ATTRJSON_H
#define PCCX_COMPILER_EMIT_ATTRJSON_H

#include "mlir/IR/Attributes.h"

#include <nlohmann/json.hpp>

namespace pccx {

/// Dictionaries, arrays, strings, numbers, unit and symbol attributes as
/// JSON (the manifest's form of host-kernel parameters and weight recipes).
nlohmann::json attrToJson(mlir::Attribute attr);

} // namespace pccx

#endif
