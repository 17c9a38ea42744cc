//===- Registration.h - everything pccx tools register ----------*- C++ -*-===//

#ifndef PCCX_COMPILER_REGISTRATION_H
#define PCCX_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
}

namespace pccx {
/// Inserts every dialect the compiler reads or writes.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers every pass and named pipeline with the MLIR pass registry.
void registerAllPasses();
} // namespace pccx

#endif
