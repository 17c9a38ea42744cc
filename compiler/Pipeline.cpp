//===- Pipeline.cpp - the pass pipelines of pccx-compile ------------------===//

#include "compiler/Pipeline.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace pccx {

void buildModelPipeline(OpPassManager &pm, const CompileOptions &o) {
  pm.addPass(createResolveKvSharing());
  if (o.foldNormGains)
    pm.addPass(createFoldNormGains());
  if (o.fuseLaurel)
    pm.addPass(createFuseLaurel());
  QuantizeWeightsOptions quant;
  quant.report = o.quantReport;
  quant.int8Tensors = o.int8Weights;
  quant.int4Scales = hw::scaleRuleName(o.int4Scales);
  quant.int4Rounding = hw::roundingName(o.int4Rounding);
  quant.int4StreamProjections = o.int4StreamProjections;
  pm.addPass(createQuantizeWeights(quant));
  pm.addPass(createPlaceAltUpStreams());
}

void buildLoweringPipeline(OpPassManager &pm, const CompileOptions &o) {
  ConvertGemma3nToPccxOptions convert;
  convert.prefillRows = o.prefillRows;
  convert.decodeBatch = o.decodeBatch;
  convert.attention = attentionName(o.attention);
  convert.target = machine::targetProfile(o.target).name;
  pm.addPass(createConvertGemma3nToPccx(convert));
  pm.addPass(createPlaceHostBuffers());
  pm.addPass(createAllocateConstants());
  pm.addPass(createAllocateL2());
  pm.addPass(createScheduleAsync());
  pm.addPass(createVerifyLegality());
}

void buildCompilePipeline(OpPassManager &pm, const CompileOptions &o) {
  buildModelPipeline(pm, o);
  buildLoweringPipeline(pm, o);
}

namespace {
/// The compile options the pipelines read, as pass-pipeline options.
struct PipelineCLOptions : public PassPipelineOptions<PipelineCLOptions> {
  Option<int64_t> prefillRows{*this, "prefill-rows",
                              llvm::cl::desc("Tokens per prefill step"),
                              llvm::cl::init(16)};
  Option<int64_t> decodeBatch{
      *this, "decode-batch",
      llvm::cl::desc("Sequences per batched decode step (above 1: a "
                     "decode_batch program)"),
      llvm::cl::init(1)};
  Option<std::string> attention{
      *this, "attention",
      llvm::cl::desc("Where attention runs: npu (default) or host"),
      llvm::cl::init("npu")};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Target profile recorded as pccx.target: v002 "
                     "(default) or v002-rtl"),
      llvm::cl::init("v002")};
  Option<bool> quantReport{
      *this, "quant-report",
      llvm::cl::desc("Report per-tensor INT4 quantization error"),
      llvm::cl::init(false)};
  Option<std::string> int8Tensors{
      *this, "int8-tensors",
      llvm::cl::desc("Keep the tensors whose name matches this regular "
                     "expression in INT8")};
  Option<std::string> int4Scales{
      *this, "int4-scales",
      llvm::cl::desc("INT4 scale rule: search (default) or absmax"),
      llvm::cl::init("search")};
  Option<std::string> int4Rounding{
      *this, "int4-rounding",
      llvm::cl::desc("INT4 rounding: nearest (default) or gptq (needs "
                     "calibration statistics when emitted)"),
      llvm::cl::init("nearest")};
  Option<bool> int4StreamProjections{
      *this, "int4-stream-projections",
      llvm::cl::desc("The AltUp stream and per-layer projections in INT4 "
                     "instead of INT8"),
      llvm::cl::init(false)};

  /// The options typed; the other compile options keep their defaults.
  bool get(CompileOptions *o, std::string *error) const {
    o->prefillRows = prefillRows;
    o->decodeBatch = decodeBatch;
    o->quantReport = quantReport;
    o->int8Weights = int8Tensors;
    o->int4StreamProjections = int4StreamProjections;
    return parseAttention(attention, &o->attention, error) &&
           parseTarget(target, &o->target, error) &&
           parseInt4Scales(int4Scales, &o->int4Scales, error) &&
           parseInt4Rounding(int4Rounding, &o->int4Rounding, error);
  }
};

/// Registers a pipeline built from the typed options; a value the options
/// do not accept fails the pipeline text, naming the option.
void registerPipeline(StringRef name, StringRef description,
                      void (*build)(OpPassManager &, const CompileOptions &)) {
  registerPassPipeline(
      name, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineCLOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        CompileOptions options;
        std::string error;
        if (!parsed.get(&options, &error))
          return errorHandler(error);
        build(pm, options);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(PipelineCLOptions());
      });
}
} // namespace

void registerPipelines() {
  registerPipeline("gemma3n-model-pipeline",
                   "Model passes: KV sharing, norm-gain folding, LAuReL "
                   "fusion, INT4, AltUp stream placement",
                   buildModelPipeline);
  registerPipeline("pccx-lowering-pipeline",
                   "gemma3n -> pccx and the machine passes",
                   buildLoweringPipeline);
  registerPipeline("pccx-compile-pipeline",
                   "What pccx-compile runs before emission",
                   buildCompilePipeline);
}

} // namespace pccx
