//===- HostParamsJson.h - host-kernel parameters as JSON --------*- C++ -*-===//

#ifndef PCCX_COMPILER_EMIT_HOSTPARAMSJSON_H
#define PCCX_COMPILER_EMIT_HOSTPARAMSJSON_H

#include "mlir/IR/Attributes.h"

#include <nlohmann/json.hpp>

namespace pccx {

/// A pccx.host.kernel's parameters in the manifest's form: dictionaries,
/// arrays, strings and numbers as themselves, a unit (a flag) as true, a
/// symbol as its name, a placed #pccx.region as [offset, elems, rows,
/// stride]. (Attributes that mirror JSON both ways are attrToJson /
/// jsonToAttr, dialects/Gemma3n/JsonAttr.h.)
nlohmann::json hostParamsToJson(mlir::Attribute attr);

} // namespace pccx

#endif
