//===- pccx-opt - run passes on pccx-compiler IR ----------------*- C++ -*-===//
//
// mlir-opt conventions: reads IR (file or stdin), runs the requested passes
// or pipelines, prints the result.
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "tools/common/LlvmHelp.h"

#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // Everything registered before the mlir-opt options is libLLVM's own
  // (other targets' back ends): listed by --help-hidden only.
  pccx::tools::showOnlyOwnOptions({});
  pccx::tools::setVersionPrinter("pccx-opt");
  mlir::DialectRegistry registry;
  pccx::registerAllDialects(registry);
  pccx::registerAllPasses();
  // mlir-opt's options, registered here rather than inside MlirOptMain so
  // that this tool parses them: a typo is one line naming the closest
  // option or pass.
  static cl::opt<std::string> inputFilename(
      cl::Positional, cl::desc("<input file>"), cl::init("-"));
  static cl::opt<std::string> outputFilename(
      "o", cl::desc("Output filename"), cl::value_desc("filename"),
      cl::init("-"));
  mlir::MlirOptMainConfig::registerCLOptions(registry);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::tracing::DebugCounter::registerCLOptions();
  std::string overview = "pccx-compiler optimizer and IR inspector\n"
                         "Available Dialects: ";
  llvm::interleave(
      registry.getDialectNames(), [&](llvm::StringRef name) { overview += name.str(); },
      [&] { overview += ", "; });
  pccx::tools::parseCommandLine(argc, argv, "pccx-opt", overview);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, inputFilename.getValue(), outputFilename.getValue(),
      registry));
}
