//===- Passes.h - pccx-compiler passes --------------------------*- C++ -*-===//

#ifndef PCCX_PASSES_PASSES_H
#define PCCX_PASSES_PASSES_H

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace pccx {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace pccx

#endif
