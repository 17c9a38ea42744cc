//===- main.cpp - pccx-compile ----------------------------------*- C++ -*-===//
//
// Compiles a Hugging Face Gemma 3n checkpoint directory. The stages live in
// compiler/ (options, import, pipeline, calibration, emission); this file
// reads the command line and reports progress.
//
//===----------------------------------------------------------------------===//

#include "compiler/Calibration.h"
#include "compiler/CompileOptions.h"
#include "dialects/Gemma3n/model/ModelImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/emit/EmitBundle.h"
#include "hw/support/Format.h"
#include "runtime/import/MatFormer.h"
#include "runtime/import/NonFinite.h"
#include "dialects/Gemma3n/model/ModelInfo.h"
#include "runtime/reference/ExportEffective.h"
#include "runtime/bundle/Bundle.h"
#include "tools/common/OutputCleanup.h"
#include "tools/common/LlvmHelp.h"
#include "tools/common/ProgressLine.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <csignal>

using namespace llvm;

namespace {

cl::OptionCategory category("pccx-compile options");

// The tool's own options; the compile options (what the bundle depends on)
// are registered by pccx::registerCompileCLOptions in the same category.
cl::opt<std::string> checkpointDir(cl::Positional, cl::Optional,
                                   cl::desc("<checkpoint directory>"),
                                   cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
enum class Emit { Gemma3n, Pccx, Bundle };
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce (default: bundle)"),
    cl::init(Emit::Bundle),
    cl::values(
        clEnumValN(Emit::Gemma3n, "gemma3n",
                   "the imported gemma3n IR (decode_step and prefill "
                   "functions); with --pass-pipeline, after it"),
        clEnumValN(Emit::Pccx, "pccx",
                   "the pccx programs after the whole pipeline"),
        clEnumValN(Emit::Bundle, "bundle",
                   "the deployable .pccx bundle (needs -o FILE)")),
    cl::cat(category));
cl::opt<std::string> exportDir(
    "export-effective-weights",
    cl::desc("After writing the bundle, also write DIR as a Hugging Face "
             "checkpoint (float32, original tensor names) holding exactly "
             "the weights the bundle computes with"),
    cl::value_desc("dir"), cl::init(""), cl::cat(category));
cl::opt<bool> exportOverwrite(
    "export-overwrite",
    cl::desc("Let --export-effective-weights replace a checkpoint already "
             "in DIR (refused by default)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> passPipeline(
    "pass-pipeline",
    cl::desc("Textual pass pipeline to run instead of the default one, as in "
             "pccx-opt, e.g. 'builtin.module(gemma3n-resolve-kv-sharing)'"),
    cl::init(""), cl::cat(category));
cl::opt<unsigned> quantizeThreads(
    "quantize-threads",
    cl::desc("Threads that quantize weights while the bundle is written "
             "(default 0: one per hardware thread); the bundle's bytes do "
             "not depend on it"),
    cl::init(0), cl::cat(category));
cl::opt<bool> listMatformerSlices(
    "list-matformer-slices",
    cl::desc("List the published MatFormer slices of E4B that "
             "--matformer-slice takes by name (layers, effective parameters, "
             "MMLU) and exit"),
    cl::init(false), cl::cat(category));
cl::opt<bool> quiet("quiet",
                    cl::desc("No progress line (it is shown only when "
                             "stderr is a terminal)"),
                    cl::init(false), cl::cat(category));

/// Shows which top-level pass of the pipeline runs ("pass 3 of 12: name").
class PassProgress : public mlir::PassInstrumentation {
public:
  PassProgress(pccx::tools::ProgressLine &line, mlir::PassManager &pm)
      : line_(line), pm_(pm) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    size_t index = 0, count = pm_.size();
    for (mlir::Pass &p : pm_.getPasses()) {
      ++index;
      if (&p == pass) {
        line_.step("pass " + std::to_string(index) + " of " +
                   std::to_string(count) + ": " + pass->getArgument().str());
        return;
      }
    }
  }

private:
  pccx::tools::ProgressLine &line_;
  mlir::PassManager &pm_;
};

/// The progress line, ended before any message so that it starts a line.
pccx::tools::ProgressLine *progressLine = nullptr;

int fail(const Twine &message) {
  if (progressLine)
    progressLine->finish();
  WithColor::error(errs(), "pccx-compile") << message << "\n";
  return 1;
}

/// Every diagnostic (remarks of --quant-report included) with its location.
mlir::LogicalResult printDiagnostic(mlir::Diagnostic &diag) {
  const char *kind =
      diag.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
      : diag.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
      : diag.getSeverity() == mlir::DiagnosticSeverity::Remark  ? "remark"
                                                                : "note";
  if (progressLine)
    progressLine->finish();
  errs() << diag.getLocation() << ": " << kind << ": " << diag << "\n";
  if (diag.getSeverity() != mlir::DiagnosticSeverity::Remark)
    for (mlir::Diagnostic &note : diag.getNotes())
      errs() << note.getLocation() << ": note: " << note << "\n";
  return mlir::success();
}

/// What the tool's own options need of each other, checked before the
/// pipeline runs.
bool checkToolOptions(std::string *error) {
  if (!exportDir.empty() && emit != Emit::Bundle) {
    *error = "--export-effective-weights needs --emit=bundle";
    return false;
  }
  if (!exportDir.empty() &&
      !pccx::reference::checkExportDirectory(exportDir, exportOverwrite, error))
    return false;
  if (emit == Emit::Bundle && (outputFile.empty() || outputFile == "-")) {
    *error = "--emit=bundle needs an output file (-o model.pccx)";
    return false;
  }
  return true;
}

/// --list-matformer-slices: the published slices, as --matformer-slice
/// takes them.
void printMatformerSlices(llvm::raw_ostream &os) {
  os << "MatFormer slices of E4B (google/gemma3n-slicing-configs); "
        "--matformer-slice takes either name. FFN: each kept layer's width "
        "in eighths of the checkpoint's (E4B: 8 = 16384, 4 = 8192).\n";
  os << pccx::formatString("%-14s %-33s %6s %7s %6s  %-15s %s\n", "name",
                           "published name", "layers", "params", "MMLU",
                           "skipped", "FFN");
  for (const pccx::import::PublishedSlice &s :
       pccx::import::publishedSlices())
    os << pccx::formatString("%-14s %-33s %6d %6.2fB %5.1f%%  %-15s %s\n",
                             s.shortName, s.name, s.layers, s.effectiveParams,
                             s.mmlu, *s.skipped ? s.skipped : "-",
                             s.ffnEighths);
}

/// The checkpoint as gemma3n IR. NaN or Inf weights would compile into a
/// bundle that computes garbage: refused unless --allow-nonfinite, and each
/// such tensor named either way.
mlir::OwningOpRef<mlir::ModuleOp>
importCheckpoint(mlir::MLIRContext &context,
                 const pccx::CompileOptions &options, std::string *error) {
  pccx::LoadedCheckpoint checkpoint;
  if (!pccx::loadCheckpoint(checkpointDir, &checkpoint, error,
                            options.matformerSlice))
    return nullptr;
  std::vector<pccx::import::NonFiniteTensor> bad =
      pccx::import::findNonFiniteTensors(*checkpoint.checkpoint);
  for (size_t i = 0; i < bad.size() && (options.allowNonFinite || i < 8); ++i) {
    progressLine->finish();
    (options.allowNonFinite ? WithColor::warning(errs(), "pccx-compile")
                            : WithColor::error(errs(), "pccx-compile"))
        << "tensor " << pccx::import::describeNonFinite(bad[i]) << "\n";
  }
  if (!bad.empty() && !options.allowNonFinite) {
    *error = std::to_string(bad.size()) + " tensor(s) of " +
             std::string(checkpointDir) +
             " hold NaN or infinite values (--allow-nonfinite compiles them "
             "anyway)";
    return nullptr;
  }
  return pccx::importModel(context, checkpoint, options.maxSeqLen, error);
}

/// The default pipeline for the --emit chosen, or --pass-pipeline.
bool buildPipeline(mlir::PassManager &pm, const pccx::CompileOptions &options,
                   std::string *error) {
  if (passPipeline.empty()) {
    if (emit != Emit::Gemma3n)
      pccx::buildCompilePipeline(pm, options);
    return true;
  }
  mlir::FailureOr<mlir::OpPassManager> parsed =
      mlir::parsePassPipeline(passPipeline, errs());
  if (failed(parsed)) {
    *error = "cannot parse --pass-pipeline '" + passPipeline + "'";
    return false;
  }
  if (parsed->getOpAnchorName() != mlir::ModuleOp::getOperationName()) {
    *error = "--pass-pipeline must be anchored on builtin.module, e.g. "
             "'builtin.module(gemma3n-resolve-kv-sharing)'";
    return false;
  }
  static_cast<mlir::OpPassManager &>(pm) = *parsed;
  return true;
}

/// Writes the lowered module as the bundle (and the effective weights when
/// asked), with the bytes on the progress line.
int writeBundle(mlir::ModuleOp module, const pccx::CompileOptions &options,
                pccx::tools::ProgressLine &progress,
                mlir::TimingScope &timing) {
  std::string error;
  pccx::EmitOptions emitOptions;
  if (!pccx::emitOptionsFromModule(module, &emitOptions, &error))
    return fail(error);
  std::map<std::string, pccx::hw::InputGram> grams;
  if (options.gptq()) {
    progress.finish();
    if (!pccx::collectGptqStatistics(checkpointDir, options, &grams, errs(),
                                     &error))
      return fail(error);
    emitOptions.inputGrams = &grams;
  }
  progress.stage(3, "writing " + outputFile);
  uint64_t totalBytes = 0;
  size_t totalItems = 0;
  auto tensorOf = [](size_t item, size_t items) {
    return "tensor " + std::to_string(item) + " of " + std::to_string(items) +
           ", ";
  };
  emitOptions.progress = [&](uint64_t done, uint64_t total, size_t item,
                             size_t items) {
    totalBytes = total;
    totalItems = items;
    progress.bytes(done, total, tensorOf(item, items));
  };
  emitOptions.threads = quantizeThreads;
  mlir::TimingScope emitTiming = timing.nest("EmitBundle");
  bool emitted = pccx::emitBundle(module, outputFile, emitOptions, &error);
  if (emitted) // the last section's padding is not reported
    progress.bytes(totalBytes, totalBytes, tensorOf(totalItems, totalItems));
  progress.finish();
  if (!emitted)
    return fail(error);
  emitTiming.stop();
  if (!exportDir.empty()) {
    auto bundle = pccx::bundle::Bundle::open(outputFile, &error);
    if (!bundle || !pccx::reference::exportEffectiveWeights(
                       *bundle, exportDir, &error, exportOverwrite))
      return fail(error);
  }
  return 0;
}

/// Prints the module (--emit=gemma3n or pccx).
int printModule(mlir::ModuleOp module) {
  std::string error;
  std::unique_ptr<ToolOutputFile> out =
      mlir::openOutputFile(outputFile, &error);
  if (!out)
    return fail(error);
  module.print(out->os());
  out->os() << "\n";
  if (out->os().has_error())
    return fail("cannot write " + outputFile);
  out->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // After LLVM's handlers, so that a signal ends in theirs once the
  // unfinished bundle is removed; SIGXFSZ ignored, so LLVM's crash handler
  // prints no bug-report banner for an over-large file.
  pccx::tools::installOutputCleanup();
  pccx::registerCompileCLOptions(category);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  pccx::registerAllPasses();
  // --help lists this tool's options and the MLIR ones the README documents;
  // --help-hidden lists every option libLLVM and MLIR registered.
  pccx::tools::showOnlyOwnOptions(
      {&category}, {"mlir-print-ir-after-all", "mlir-timing",
                    "mlir-print-debuginfo"});
  pccx::tools::setVersionPrinter("pccx-compile");
  pccx::tools::parseCommandLine(
      argc, argv, "pccx-compile",
      "pccx-compile: compiles a Hugging Face Gemma 3n checkpoint directory "
      "(config.json + safetensors) for the pccx v002 NPU\n");
  if (listMatformerSlices) {
    printMatformerSlices(outs());
    return 0;
  }
  if (checkpointDir.empty())
    return fail("Not enough positional command line arguments specified! (see --help)");
  pccx::CompileOptions options;
  std::string error;
  if (!pccx::compileOptionsFromCL(&options, &error))
    return fail(error);

  mlir::DialectRegistry registry;
  pccx::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // A refusal is its own line at the op's location, without the op's IR.
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler diagnostics(&context, printDiagnostic);
  // Progress on a terminal only: logs and pipes stay clean.
  const bool bundleOut = emit == Emit::Bundle;
  pccx::tools::ProgressLine progress(
      stderr, !quiet && llvm::sys::Process::StandardErrIsDisplayed(),
      bundleOut ? 3 : 2);
  progressLine = &progress;
  progress.stage(1, "importing " + checkpointDir);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importCheckpoint(context, options, &error);
  if (!module ||
      !pccx::resolveInt8Budget(checkpointDir, options, errs(), &error) ||
      !checkToolOptions(&error))
    return fail(error);

  mlir::DefaultTimingManager tm;
  mlir::applyDefaultTimingManagerCLOptions(tm);
  mlir::PassManager pm(&context);
  pm.enableVerifier(true);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return fail("invalid pass manager options");
  mlir::TimingScope timing = tm.getRootScope();
  pm.enableTiming(timing);
  // The options go on the module before the pipeline, so that a saved
  // lowered module can still be emitted (pccx-translate).
  if (!buildPipeline(pm, options, &error) ||
      !pccx::recordCompileOptions(*module, options, checkpointDir, &error))
    return fail(error);
  progress.stage(2, "running the pass pipeline");
  pm.addInstrumentation(std::make_unique<PassProgress>(progress, pm));
  if (failed(pm.run(*module))) {
    progress.finish();
    return 1; // diagnostics already printed with their locations
  }
  if (bundleOut)
    return writeBundle(*module, options, progress, timing);
  progress.finish();
  return printModule(*module);
}
