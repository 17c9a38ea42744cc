//===- Passes.h - pccx-compiler passes --------------------------*- C++ -*-===//

#ifndef PCCX_PASSES_PASSES_H
#define PCCX_PASSES_PASSES_H

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"
#include "hw/abi/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace pccx {

/// The values of a choice type of hw/abi/CompileOptions.def as the literal
/// values of a typed pass option (the last argument of its Passes.td
/// Option), so a pass accepts exactly the names pccx-compile accepts.
template <typename T> struct ChoiceValues {
  template <class Opt> void apply(Opt &option) const {
    for (T value : Choices<T>::values)
      option.getParser().addLiteralOption(choiceName(value), value,
                                          choiceName(value));
  }
};

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace pccx

#endif
