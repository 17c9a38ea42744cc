//===- JsonAttr.h - JSON values as attributes and back ----------*- C++ -*-===//
//
// The attributes that mirror a JSON document (config.json in
// #gemma3n.config, the compile options in pccx.compile_options): objects as
// dictionaries, arrays as arrays, strings, booleans, integers (i64) and
// floats (f64) as themselves, null as a unit attribute.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_DIALECTS_GEMMA3N_JSONATTR_H
#define PCCX_DIALECTS_GEMMA3N_JSONATTR_H

#include "mlir/IR/Builders.h"

#include <nlohmann/json.hpp>

#include <string>

namespace pccx {

mlir::Attribute jsonToAttr(mlir::Builder &builder, const nlohmann::json &j);

/// The inverse of jsonToAttr; an attribute outside that form is an error
/// that prints it.
bool attrToJson(mlir::Attribute attr, nlohmann::json &out, std::string *error);

} // namespace pccx

#endif
