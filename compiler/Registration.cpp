//===- Registration.cpp - everything pccx tools register --------*- C++ -*-===//

#include "compiler/Registration.h"

#include "dialects/Pccx/PccxOps.h"

#include "mlir/IR/DialectRegistry.h"

void pccx::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<pccx::dialect::PccxDialect>();
}

void pccx::registerAllPasses() {}
