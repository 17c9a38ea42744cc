//===- PccxOps.h - pccx v002 dialect -----------------------------*- C++ -*-===//

#ifndef PCCX_DIALECTS_PCCX_PCCXOPS_H
#define PCCX_DIALECTS_PCCX_PCCXOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "hw/isa/Isa.h"
#include "hw/machine/Target.h"
#include "hw/numerics/Quantize.h"

#include <nlohmann/json.hpp>

#include "dialects/Pccx/PccxOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Pccx/PccxAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Pccx/PccxOps.h.inc"

namespace pccx::dialect {

/// The opcode an instruction op encodes, or nothing for other ops.
std::optional<isa::Opcode> opcodeOf(mlir::Operation *op);

/// Resolves a symbolic L2 address to a word address, or nothing.
using AddressResolver =
    llvm::function_ref<std::optional<int64_t>(mlir::FlatSymbolRefAttr)>;

/// Reads every field of an instruction op into an isa::Instruction, using
/// the field and flag names of hw/isa/PccxIsa.def. Symbolic addresses are
/// resolved through `resolve`; without one (or when it yields nothing) a
/// symbolic address is an error reported at the op.
mlir::FailureOr<isa::Instruction> toInstruction(mlir::Operation *op,
                                                AddressResolver resolve = {});

/// The module attribute that names the target (a #pccx.target).
constexpr llvm::StringLiteral kTargetAttrName = "pccx.target";

/// The target of the module enclosing `op` (or `op` itself): its
/// pccx.target, or the documented v002 semantics when it records none.
machine::Target targetOf(mlir::Operation *op);

/// Records `target` on `module` as its pccx.target.
void setTarget(mlir::ModuleOp module, machine::Target target);

} // namespace pccx::dialect

#endif
