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
  quant.quantReport = o.quantReport;
  quant.int8Weights = o.int8Weights;
  quant.int4Scales = o.int4Scales;
  quant.int4Rounding = o.int4Rounding;
  quant.int4Group = o.int4Group;
  quant.int4StreamProjections = o.int4StreamProjections;
  pm.addPass(createQuantizeWeights(quant));
  pm.addPass(createPlaceAltUpStreams());
}

void buildLoweringPipeline(OpPassManager &pm, const CompileOptions &o) {
  ConvertGemma3nToPccxOptions convert;
  convert.prefillRows = o.prefillRows;
  convert.decodeBatch = o.decodeBatch;
  convert.attention = o.attention;
  convert.target = o.target;
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
using namespace option_form;

// The rows the pipelines read (Stage Model or Lowering) become pipeline
// options; the others keep their defaults.
#define PCCX_PIPELINE_ROW_Import(...)
#define PCCX_PIPELINE_ROW_Calibration(...)
#define PCCX_PIPELINE_ROW_Emit(...)
#define PCCX_PIPELINE_ROW_Model(Member, Type, Flag, Form, Help)                 \
  Option<Codec<Type, Form>::Cl> Member{                                        \
      *this, Flag, llvm::cl::desc(Help),                                       \
      llvm::cl::init(Codec<Type, Form>::initial(compile_defaults::Member))};
#define PCCX_PIPELINE_ROW_Lowering PCCX_PIPELINE_ROW_Model

/// The compile options the pipelines read, as pass-pipeline options, with
/// pccx-compile's spelling and checks.
struct PipelineCLOptions : public PassPipelineOptions<PipelineCLOptions> {
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, Key, Record,     \
                            Stage, ValueDesc, Help)                             \
  PCCX_PIPELINE_ROW_##Stage(Member, Type, Flag, Form, Help)
#include "hw/abi/CompileOptions.def"

  /// The options typed and validated.
  bool get(CompileOptions *o, std::string *error) const {
#define PCCX_PIPELINE_READ(Member, Type, Flag, Form, Help)                      \
  if (!Codec<Type, Form>::read(Flag, Member, &o->Member, error))               \
    return false;
#undef PCCX_PIPELINE_ROW_Model
#undef PCCX_PIPELINE_ROW_Lowering
#define PCCX_PIPELINE_ROW_Model PCCX_PIPELINE_READ
#define PCCX_PIPELINE_ROW_Lowering PCCX_PIPELINE_READ
#define PCCX_COMPILE_OPTION(Member, Type, Default, Flag, Form, Key, Record,     \
                            Stage, ValueDesc, Help)                             \
  PCCX_PIPELINE_ROW_##Stage(Member, Type, Flag, Form, Help)
#include "hw/abi/CompileOptions.def"
    return o->validate(error);
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
