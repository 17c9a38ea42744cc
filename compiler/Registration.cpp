//===- Registration.cpp - everything pccx tools register --------*- C++ -*-===//

#include "compiler/Registration.h"

#include "dialects/Gemma3n/Gemma3nOps.h"
#include "dialects/Pccx/PccxOps.h"
#include "compiler/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/DialectRegistry.h"

void pccx::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<pccx::dialect::PccxDialect, pccx::gemma3n::Gemma3nDialect,
                  mlir::func::FuncDialect>();
}

void pccx::registerAllPasses() {
  pccx::registerPccxPasses();
  pccx::registerPipelines();
}
