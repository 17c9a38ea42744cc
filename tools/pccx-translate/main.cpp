//===- pccx-translate - translations out of pccx IR -------------*- C++ -*-===//
//
// mlir-translate conventions: `pccx-translate --pccx-to-bundle IN.mlir -o
// OUT.pccx` writes a saved lowered module as a bundle.
//===----------------------------------------------------------------------===//

#include "compiler/emit/EmitBundle.h"
#include "tools/common/OutputCleanup.h"
#include "tools/common/LlvmHelp.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  // --pccx-to-bundle writes through hw/support/OutputFile.
  pccx::tools::installOutputCleanup();
  pccx::registerBundleTranslation();
  pccx::tools::setVersionPrinter("pccx-translate");
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "pccx-compiler translations\n"));
}
