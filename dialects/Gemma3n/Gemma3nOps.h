//===- Gemma3nOps.h - Gemma 3n model-level dialect ---------------*- C++ -*-===//

#ifndef PCCX_DIALECTS_GEMMA3N_GEMMA3NOPS_H
#define PCCX_DIALECTS_GEMMA3N_GEMMA3NOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Gemma3n/Gemma3nOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Gemma3n/Gemma3nOps.h.inc"

#endif
