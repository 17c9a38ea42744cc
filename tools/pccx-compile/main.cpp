//===- main.cpp - pccx-compile ----------------------------------*- C++ -*-===//
//
// Compiles a Hugging Face Gemma 3n checkpoint directory. The stages live in
// compiler/ (import, pipeline, emission); this file reads the command line.
//
//===----------------------------------------------------------------------===//

#include "dialects/Gemma3n/model/ModelImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/Registration.h"
#include "compiler/emit/EmitBundle.h"
#include "runtime/import/ChatTemplateFile.h"
#include "runtime/import/NonFinite.h"
#include "dialects/Gemma3n/model/ModelInfo.h"
#include "runtime/reference/ExportEffective.h"
#include "runtime/reference/InputStatistics.h"
#include "runtime/reference/Sensitivity.h"
#include "hw/numerics/Quantize.h"
#include "runtime/bundle/Bundle.h"
#include "tools/common/GuardedMain.h"
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <csignal>

using namespace llvm;

namespace {

cl::OptionCategory category("pccx-compile options");

cl::opt<std::string> checkpointDir(cl::Positional, cl::Required,
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
cl::opt<int64_t> prefillRows("prefill-rows",
                             cl::desc("Tokens per prefill step, the GEMM "
                                      "rows (default 16)"),
                             cl::init(16), cl::cat(category));
cl::opt<std::string> attention(
    "attention",
    cl::desc("Where attention runs: npu (default; Q.K and P.V as GEMV/GEMM "
             "over KV caches kept as INT8 weight records in device memory) "
             "or host (dot products on the CPU over host KV caches, see "
             "--kv-dtype)"),
    cl::init("npu"), cl::cat(category));
cl::opt<std::string> target(
    "target",
    cl::desc("Target profile the words follow: v002 (default, the documented "
             "semantics) or v002-rtl (the conventions of the v002 RTL; "
             "docs/isa-semantics.md, Targets). What the target cannot run "
             "is refused, naming the missing capability"),
    cl::init("v002"), cl::cat(category));
cl::opt<std::string> kvDtype("kv-dtype",
                             cl::desc("With --attention host: KV-cache "
                                      "storage on the host, f16 (default), "
                                      "f32, or int8 (one scale per cached "
                                      "row)"),
                             cl::init("f16"), cl::cat(category));
cl::opt<std::string> int8Weights(
    "int8-weights",
    cl::desc("Keep the weights whose checkpoint name matches this regular "
             "expression in INT8 instead of INT4 (e.g. "
             "'.*self_attn\\..*' or '.*' for all); one scale per row either "
             "way"),
    cl::value_desc("regex"), cl::init(""), cl::cat(category));
cl::opt<std::string> int4Scales(
    "int4-scales",
    cl::desc("How INT4 row scales are chosen: search (default; the scale "
             "with the least squared row error, docs/quantization.md) or "
             "absmax (max|row| / 7); the record format is the same"),
    cl::value_desc("search|absmax"), cl::init("search"), cl::cat(category));
cl::opt<bool> int4StreamProjections(
    "int4-stream-projections",
    cl::desc("Quantize the AltUp stream projections and the per-layer "
             "projections to INT4 (default INT8: INT4 costs measurable "
             "quality there for ~1 % of the weight bytes per token)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> int8Budget(
    "int8-budget",
    cl::desc("Keep in INT8 the tensors whose INT4 quantization moves the "
             "float reference's predictions on the --calibration text most "
             "per extra byte, spending at most P percent of the INT4 weight "
             "bytes (e.g. 10 or 10%); adds to --int8-weights"),
    cl::value_desc("P"), cl::init(""), cl::cat(category));
cl::opt<std::string> int4Rounding(
    "int4-rounding",
    cl::desc("How INT4 codes are rounded: nearest (default) or gptq (each "
             "row's rounding error spread over its later columns to "
             "minimise the projection's output error on the --calibration "
             "text; without --calibration only the LM head, against its own "
             "rows; docs/quantization.md)"),
    cl::value_desc("nearest|gptq"), cl::init("nearest"), cl::cat(category));
cl::opt<std::string> calibration(
    "calibration",
    cl::desc("Text file for --int8-budget and --int4-rounding gptq, "
             "tokenized with the checkpoint's tokenizer.model into windows "
             "of up to 128 positions (the budget scores the first 4, gptq "
             "uses up to 64)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
cl::opt<bool> quantReport(
    "quant-report",
    cl::desc("Report each tensor's relative INT4 quantization error"),
    cl::init(false), cl::cat(category));
cl::opt<bool> allowNonFinite(
    "allow-nonfinite",
    cl::desc("Compile a checkpoint with NaN or infinite weights (refused by "
             "default; each such tensor is still named in a warning)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> noFoldNormGains(
    "no-fold-norm-gains",
    cl::desc("Keep RMSNorm gains out of the projection weights"),
    cl::init(false), cl::cat(category));
cl::opt<bool> noFuseLaurel("no-fuse-laurel",
                           cl::desc("Keep the LAuReL branch unfused"),
                           cl::init(false), cl::cat(category));
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
cl::opt<std::string> tokenizer(
    "tokenizer",
    cl::desc("SentencePiece model to embed (default: CKPT_DIR/tokenizer.model "
             "when present)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
cl::opt<int64_t> maxSeqLen("max-seq-len",
                           cl::desc("KV-cache positions per layer (default "
                                    "1024)"),
                           cl::init(1024), cl::cat(category));
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

/// Windows of GPTQ calibration text: enough tokens for the Gram matrices of
/// the widest inputs, one float-reference pass each.
constexpr size_t kGptqWindows = 64;

/// The --calibration text as windows of up to 128 positions, at most
/// `maxWindows`.
bool calibrationWindows(const pccx::reference::ReferenceCheckpoint &checkpoint,
                        size_t maxWindows, int64_t *positions,
                        std::vector<std::vector<int32_t>> *windows,
                        std::string *error) {
  std::string tok = tokenizer.empty()
                        ? std::string(checkpointDir) + "/tokenizer.model"
                        : std::string(tokenizer);
  *positions = std::min<int64_t>(128, maxSeqLen);
  return pccx::reference::calibrationWindows(
      calibration, tok, int32_t(checkpoint.config.bos_token_id.value_or(-1)),
      *positions, maxWindows, windows, error);
}

/// --int4-rounding gptq: the Gram matrix of every quantized tensor's inputs
/// on the calibration text; without one, the LM head's data-free stand-in.
bool collectGrams(std::map<std::string, pccx::hw::InputGram> *grams,
                  std::string *error) {
  auto checkpoint = pccx::reference::ReferenceCheckpoint::open(
      std::string(checkpointDir), error);
  if (checkpoint && calibration.empty()) {
    if (!pccx::reference::lmHeadSelfGram(*checkpoint, grams, error))
      return false;
    errs() << "int4-rounding gptq: no --calibration; the LM head is rounded "
              "against the Gram matrix of its own rows, every other tensor "
              "to nearest\n";
    return true;
  }
  int64_t positions = 0;
  std::vector<std::vector<int32_t>> windows;
  if (!checkpoint ||
      !calibrationWindows(*checkpoint, kGptqWindows, &positions, &windows,
                          error) ||
      !pccx::reference::collectInputGrams(*checkpoint, windows, positions,
                                          grams, error))
    return false;
  size_t tokens = 0;
  for (const auto &w : windows)
    tokens += w.size();
  errs() << "int4-rounding gptq: input statistics of " << grams->size()
         << " tensors from " << tokens << " calibration tokens in "
         << windows.size() << " windows\n";
  return true;
}

/// --int8-budget: the tensors to keep in INT8 as an exact-name expression,
/// with one line per measured tensor on stderr.
bool chooseByBudget(pccx::hw::ScaleRule int4Rule, std::string *regex,
                    std::string *error) {
  std::string text = int8Budget;
  if (!text.empty() && text.back() == '%')
    text.pop_back();
  char *end = nullptr;
  double percent = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(percent >= 0 && percent <= 100)) {
    *error = "--int8-budget must be a percentage from 0 to 100, got '" +
             int8Budget + "'";
    return false;
  }
  auto checkpoint = pccx::reference::ReferenceCheckpoint::open(
      std::string(checkpointDir), error);
  if (!checkpoint)
    return false;
  int64_t positions = 0;
  std::vector<std::vector<int32_t>> windows;
  if (!calibrationWindows(*checkpoint, 4, &positions, &windows, error))
    return false;
  std::vector<pccx::reference::TensorSensitivity> measured;
  if (!pccx::reference::measureSensitivity(*checkpoint, windows, positions,
                                           int4Rule, &measured, error))
    return false;
  std::vector<std::string> chosen =
      pccx::reference::chooseInt8Tensors(measured, percent / 100);
  for (const auto &t : measured) {
    bool kept = std::count(chosen.begin(), chosen.end(), t.name) != 0;
    errs() << llvm::format("int8-budget: %-44s KL %.6f  int4 %lld bytes, "
                           "int8 +%lld%s\n",
                           t.name.c_str(), t.meanKl, (long long)t.int4Bytes,
                           (long long)(t.int8Bytes - t.int4Bytes),
                           kept ? "  -> int8" : "");
  }
  *regex = pccx::reference::exactNamesRegex(chosen);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // After LLVM's handlers, so that a signal ends in theirs once the
  // unfinished bundle is removed; SIGXFSZ ignored, so LLVM's crash handler
  // prints no bug-report banner for an over-large file.
  pccx::tools::installOutputCleanup();
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
  cl::ParseCommandLineOptions(
      argc, argv,
      "pccx-compile: compiles a Hugging Face Gemma 3n checkpoint directory "
      "(config.json + safetensors) for the pccx v002 NPU\n");

  mlir::DialectRegistry registry;
  pccx::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  // Every diagnostic (remarks of --quant-report included) with its location.
  mlir::ScopedDiagnosticHandler diagnostics(
      &context, [](mlir::Diagnostic &diag) {
        const char *kind = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                               ? "error"
                           : diag.getSeverity() ==
                                   mlir::DiagnosticSeverity::Warning
                               ? "warning"
                           : diag.getSeverity() ==
                                   mlir::DiagnosticSeverity::Remark
                               ? "remark"
                               : "note";
        if (progressLine)
          progressLine->finish();
        errs() << diag.getLocation() << ": " << kind << ": " << diag << "\n";
        if (diag.getSeverity() != mlir::DiagnosticSeverity::Remark)
          for (mlir::Diagnostic &note : diag.getNotes())
            errs() << note.getLocation() << ": note: " << note << "\n";
        return mlir::success();
      });

  // Progress on a terminal only: logs and pipes stay clean.
  const bool bundleOut = emit == Emit::Bundle;
  pccx::tools::ProgressLine progress(
      stderr, !quiet && llvm::sys::Process::StandardErrIsDisplayed(),
      bundleOut ? 3 : 2);
  progressLine = &progress;
  progress.stage(1, "importing " + checkpointDir);

  std::string error;
  pccx::LoadedCheckpoint checkpoint;
  if (!pccx::loadCheckpoint(checkpointDir, &checkpoint, &error))
    return fail(error);
  // NaN or Inf weights would compile into a bundle that computes garbage.
  {
    std::vector<pccx::import::NonFiniteTensor> bad =
        pccx::import::findNonFiniteTensors(*checkpoint.checkpoint);
    for (size_t i = 0; i < bad.size() && (allowNonFinite || i < 8); ++i) {
      progress.finish();
      (allowNonFinite ? WithColor::warning(errs(), "pccx-compile")
                      : WithColor::error(errs(), "pccx-compile"))
          << "tensor " << pccx::import::describeNonFinite(bad[i]) << "\n";
    }
    if (!bad.empty() && !allowNonFinite)
      return fail(std::to_string(bad.size()) + " tensor(s) of " +
                  std::string(checkpointDir) +
                  " hold NaN or infinite values (--allow-nonfinite compiles "
                  "them anyway)");
  }
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
  if (kvDtype != "f16" && kvDtype != "f32" && kvDtype != "int8")
    return fail("--kv-dtype must be f16, f32 or int8, got '" + kvDtype + "'");
  if (attention != "npu" && attention != "host")
    return fail("--attention must be npu or host, got '" + attention + "'");
  if (attention == "npu" && kvDtype.getNumOccurrences())
    return fail("--kv-dtype sets the host KV caches of --attention host; "
                "with attention on the NPU the caches are INT8 weight "
                "records (docs/lowering.md)");
  pccx::machine::Target targetId;
  if (!pccx::machine::lookupTarget(target, targetId))
    return fail("--target must be one of " + pccx::machine::targetNames() +
                ", got '" + target + "'");
  pccx::hw::ScaleRule int4Rule;
  if (!pccx::hw::parseScaleRule(int4Scales, &int4Rule))
    return fail("--int4-scales must be absmax or search, got '" + int4Scales +
                "'");
  pccx::hw::Rounding int4Round;
  if (!pccx::hw::parseRounding(int4Rounding, &int4Round))
    return fail("--int4-rounding must be nearest or gptq, got '" +
                int4Rounding + "'");
  const bool gptq = int4Round == pccx::hw::Rounding::Gptq;
  if (!int8Budget.empty() && calibration.empty())
    return fail("--int8-budget and --calibration go together");
  if (!calibration.empty() && int8Budget.empty() && !gptq)
    return fail("--calibration is used by --int8-budget and --int4-rounding "
                "gptq; give one of them");
  if (gptq && quantReport)
    return fail("--quant-report measures nearest rounding; it cannot be "
                "combined with --int4-rounding gptq");
  std::string int8Regex = int8Weights;
  if (!int8Budget.empty()) {
    std::string chosen, error;
    if (!chooseByBudget(int4Rule, &chosen, &error))
      return fail(error);
    if (!chosen.empty())
      int8Regex = int8Regex.empty() ? chosen : int8Regex + "|" + chosen;
  }
  if (!exportDir.empty() && emit != Emit::Bundle)
    return fail("--export-effective-weights needs --emit=bundle");
  // Before the compile, not after it: the refusal costs nothing then.
  if (!exportDir.empty() &&
      !pccx::reference::checkExportDirectory(exportDir, exportOverwrite,
                                             &error))
    return fail(error);
  if (emit == Emit::Bundle && (outputFile.empty() || outputFile == "-"))
    return fail("--emit=bundle needs an output file (-o model.pccx)");
  pccx::PipelineOptions pipeline;
  pipeline.prefillRows = prefillRows;
  pipeline.attention = attention;
  pipeline.target = target;
  pipeline.quantReport = quantReport;
  pipeline.int8Tensors = int8Regex;
  pipeline.int4Scales = int4Scales;
  pipeline.int4Rounding = int4Rounding;
  pipeline.int4StreamProjections = int4StreamProjections;
  pipeline.foldNormGains = !noFoldNormGains;
  pipeline.fuseLaurel = !noFuseLaurel;
  if (passPipeline.empty() && emit != Emit::Gemma3n) {
    pccx::buildModelPipeline(pm, pipeline);
    pccx::buildLoweringPipeline(pm, pipeline);
  }
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
  // What the bundle records besides the programs, kept on the module so a
  // saved lowered module can still be emitted (pccx-translate).
  {
    nlohmann::json compileOptions = {
        {"max_seq_len", int64_t(maxSeqLen)},
        {"prefill_rows", int64_t(prefillRows)},
        {"attention", std::string(attention)},
        {"kv_dtype", std::string(kvDtype)},
        {"target", std::string(target)},
        {"fold_norm_gains", !noFoldNormGains},
        {"fuse_laurel", !noFuseLaurel},
        {"quantization",
         pccx::hw::schemeName(pccx::hw::QuantScheme{
             pccx::hw::WeightFormat::Int4, int4Rule, int4Round})},
        {"int4_scales", std::string(int4Scales)},
        {"compiler_version", PCCX_VERSION}};
    if (!int8Regex.empty())
      compileOptions["int8_weights"] = int8Regex;
    if (gptq)
      compileOptions["int4_rounding"] = std::string(int4Rounding);
    if (int4StreamProjections)
      compileOptions["int4_stream_projections"] = true;
    if (!int8Budget.empty())
      compileOptions["int8_budget"] = std::string(int8Budget);
    if (!calibration.empty())
      compileOptions["calibration"] =
          llvm::sys::path::filename(calibration).str();
    std::string tok = tokenizer;
    if (tok.empty() &&
        llvm::sys::fs::exists(std::string(checkpointDir) + "/tokenizer.model"))
      tok = std::string(checkpointDir) + "/tokenizer.model";
    if (!tok.empty())
      compileOptions["tokenizer"] = tok;
    std::string chatTemplate, templateSource;
    if (!pccx::import::readChatTemplate(checkpointDir, &chatTemplate,
                                        &templateSource, &error))
      return fail(error);
    if (!chatTemplate.empty())
      compileOptions["chat_template"] = chatTemplate;
    mlir::Builder b(&context);
    (*module)->setAttr(pccx::kCompileOptionsAttr,
                       pccx::jsonToAttr(b, compileOptions));
  }
  progress.stage(2, "running the pass pipeline");
  pm.addInstrumentation(std::make_unique<PassProgress>(progress, pm));
  if (failed(pm.run(*module))) {
    progress.finish();
    return 1; // diagnostics already printed with their locations
  }

  if (emit == Emit::Bundle) {
    pccx::EmitOptions emitOptions;
    if (!pccx::emitOptionsFromModule(*module, &emitOptions, &error))
      return fail(error);
    std::map<std::string, pccx::hw::InputGram> grams;
    if (gptq) {
      progress.finish();
      if (!collectGrams(&grams, &error))
        return fail(error);
      emitOptions.inputGrams = &grams;
    }
    progress.stage(3, "writing " + outputFile);
    uint64_t totalBytes = 0;
    size_t totalItems = 0;
    auto tensorOf = [](size_t item, size_t items) {
      return "tensor " + std::to_string(item) + " of " +
             std::to_string(items) + ", ";
    };
    emitOptions.progress = [&](uint64_t done, uint64_t total, size_t item,
                               size_t items) {
      totalBytes = total;
      totalItems = items;
      progress.bytes(done, total, tensorOf(item, items));
    };
    emitOptions.threads = quantizeThreads;
    mlir::TimingScope emitTiming = timing.nest("EmitBundle");
    bool emitted = pccx::emitBundle(*module, outputFile, emitOptions, &error);
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

  progress.finish();
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
