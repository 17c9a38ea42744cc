//===- Gemma3nOps.h - Gemma 3n model-level dialect ---------------*- C++ -*-===//

#ifndef PCCX_DIALECTS_GEMMA3N_GEMMA3NOPS_H
#define PCCX_DIALECTS_GEMMA3N_GEMMA3NOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "runtime/import/Gemma3nConfig.h"

#include "llvm/ADT/Hashing.h"

namespace pccx::import {
/// For the storage of #gemma3n.config: configs are equal when their
/// config.json forms are.
bool operator==(const Gemma3nTextConfig &a, const Gemma3nTextConfig &b);
llvm::hash_code hash_value(const Gemma3nTextConfig &config);
} // namespace pccx::import

#include "dialects/Gemma3n/Gemma3nOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Gemma3n/Gemma3nAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Gemma3n/Gemma3nOps.h.inc"

#endif
