//===- Pipeline.cpp - the pass pipelines of pccx-compile ------------------===//

#include "compiler/Pipeline.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace pccx {

void buildModelPipeline(OpPassManager &pm, const PipelineOptions &o) {
  pm.addPass(createResolveKvSharing());
  if (o.foldNormGains)
    pm.addPass(createFoldNormGains());
  if (o.fuseLaurel)
    pm.addPass(createFuseLaurel());
  QuantizeWeightsOptions quant;
  quant.report = o.quantReport;
  quant.int8Tensors = o.int8Tensors;
  quant.int4Scales = o.int4Scales;
  quant.int4Rounding = o.int4Rounding;
  quant.int4StreamProjections = o.int4StreamProjections;
  pm.addPass(createQuantizeWeights(quant));
  pm.addPass(createPlaceAltUpStreams());
}

void buildLoweringPipeline(OpPassManager &pm, const PipelineOptions &o) {
  ConvertGemma3nToPccxOptions convert;
  convert.prefillRows = o.prefillRows;
  convert.attention = o.attention;
  convert.target = o.target;
  pm.addPass(createConvertGemma3nToPccx(convert));
  pm.addPass(createPlaceHostBuffers());
  pm.addPass(createAllocateConstants());
  pm.addPass(createAllocateL2());
  pm.addPass(createScheduleAsync());
  pm.addPass(createVerifyLegality());
}

namespace {
struct CLIPipelineOptions : public PassPipelineOptions<CLIPipelineOptions> {
  Option<int64_t> prefillRows{*this, "prefill-rows",
                              llvm::cl::desc("Tokens per prefill step"),
                              llvm::cl::init(16)};
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
  PipelineOptions get() const {
    PipelineOptions o;
    o.prefillRows = prefillRows;
    o.attention = attention;
    o.target = target;
    o.quantReport = quantReport;
    o.int8Tensors = int8Tensors;
    o.int4Scales = int4Scales;
    o.int4Rounding = int4Rounding;
    o.int4StreamProjections = int4StreamProjections;
    return o;
  }
};
} // namespace

void registerPipelines() {
  PassPipelineRegistration<CLIPipelineOptions>(
      "gemma3n-model-pipeline",
      "Model passes: KV sharing, norm-gain folding, LAuReL fusion, INT4, "
      "AltUp stream placement",
      [](OpPassManager &pm, const CLIPipelineOptions &o) {
        buildModelPipeline(pm, o.get());
      });
  PassPipelineRegistration<CLIPipelineOptions>(
      "pccx-lowering-pipeline",
      "gemma3n -> pccx and the machine passes",
      [](OpPassManager &pm, const CLIPipelineOptions &o) {
        buildLoweringPipeline(pm, o.get());
      });
  PassPipelineRegistration<CLIPipelineOptions>(
      "pccx-compile-pipeline", "What pccx-compile runs before emission",
      [](OpPassManager &pm, const CLIPipelineOptions &o) {
        buildModelPipeline(pm, o.get());
        buildLoweringPipeline(pm, o.get());
      });
}

} // namespace pccx
