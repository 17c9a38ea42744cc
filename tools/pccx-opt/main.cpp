//===- pccx-opt - run passes on pccx-compiler IR ----------------*- C++ -*-===//
//
// mlir-opt conventions: reads IR (file or stdin), runs the requested passes
// or pipelines, prints the result.
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "tools/common/LlvmHelp.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // Everything registered before MlirOptMain adds the mlir-opt options is
  // libLLVM's own (other targets' back ends): listed by --help-hidden only.
  pccx::tools::showOnlyOwnOptions({});
  pccx::tools::setVersionPrinter("pccx-opt");
  mlir::DialectRegistry registry;
  pccx::registerAllDialects(registry);
  pccx::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "pccx-compiler optimizer and IR inspector\n", registry));
}
