//===- main.cpp - pccx-compile ----------------------------------*- C++ -*-===//
//
// Compiles a Hugging Face Gemma 3n checkpoint directory. The stages live in
// compiler/ (import, pipeline, emission); this file reads the command line.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModelImporter.h"
#include "compiler/Registration.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {

cl::OptionCategory category("pccx-compile options");

cl::opt<std::string> checkpointDir(cl::Positional, cl::Required,
                                   cl::desc("<checkpoint directory>"),
                                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
enum class Emit { Gemma3n };
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Gemma3n),
    cl::values(clEnumValN(Emit::Gemma3n, "gemma3n",
                          "the imported gemma3n IR (decode_step and prefill "
                          "functions), after --pass-pipeline if given")),
    cl::cat(category));
cl::opt<int64_t> maxSeqLen("max-seq-len",
                           cl::desc("KV-cache positions per layer (default "
                                    "1024)"),
                           cl::init(1024), cl::cat(category));
cl::opt<std::string> passPipeline(
    "pass-pipeline",
    cl::desc("Textual pass pipeline to run on the module, as in pccx-opt, "
             "e.g. 'builtin.module(canonicalize)'"),
    cl::init(""), cl::cat(category));

int fail(const Twine &message) {
  WithColor::error(errs(), "pccx-compile") << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  pccx::registerAllPasses();
  cl::ParseCommandLineOptions(
      argc, argv,
      "pccx-compile: compiles a Hugging Face Gemma 3n checkpoint directory "
      "(config.json + safetensors) for the pccx v002 NPU\n");

  mlir::DialectRegistry registry;
  pccx::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string error;
  pccx::LoadedCheckpoint checkpoint;
  if (!pccx::loadCheckpoint(checkpointDir, &checkpoint, &error))
    return fail(error);
  pccx::ImportOptions options;
  options.maxSeqLen = maxSeqLen;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      pccx::importModel(context, checkpoint, options, &error);
  if (!module)
    return fail(error);

  mlir::DefaultTimingManager tm;
  mlir::applyDefaultTimingManagerCLOptions(tm);
  mlir::PassManager pm(&context);
  pm.enableVerifier(true);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return fail("invalid pass manager options");
  mlir::TimingScope timing = tm.getRootScope();
  pm.enableTiming(timing);
  if (!passPipeline.empty()) {
    mlir::FailureOr<mlir::OpPassManager> parsed =
        mlir::parsePassPipeline(passPipeline, errs());
    if (failed(parsed))
      return fail("cannot parse --pass-pipeline '" + passPipeline + "'");
    if (parsed->getOpAnchorName() != mlir::ModuleOp::getOperationName())
      return fail("--pass-pipeline must be anchored on builtin.module, e.g. "
                  "'builtin.module(gemma3n-resolve-kv-sharing)'");
    static_cast<mlir::OpPassManager &>(pm) = *parsed;
  }
  if (failed(pm.run(*module)))
    return 1; // diagnostics already printed with their locations

  std::unique_ptr<ToolOutputFile> out =
      mlir::openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  module->print(out->os());
  out->os() << "\n";
  if (out->os().has_error())
    return fail("cannot write " + outputFile);
  out->keep();
  return 0;
}
