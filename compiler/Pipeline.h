//===- Pipeline.h - the pass pipelines of pccx-compile ----------*- C++ -*-===//

#ifndef PCCX_COMPILER_PIPELINE_H
#define PCCX_COMPILER_PIPELINE_H

#include "compiler/CompileOptions.h"

#include "mlir/Pass/PassManager.h"

namespace pccx {

/// Model passes on imported gemma3n IR: KV-sharing resolution, norm-gain
/// folding, LAuReL fusion, INT4/INT8 marking, AltUp stream placement.
void buildModelPipeline(mlir::OpPassManager &pm, const CompileOptions &o);
/// gemma3n -> pccx and the machine passes: constant cache, L2, async,
/// legality.
void buildLoweringPipeline(mlir::OpPassManager &pm, const CompileOptions &o);
/// Both: what pccx-compile runs between import and emission.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &o);

/// Registers "gemma3n-model-pipeline", "pccx-lowering-pipeline" and
/// "pccx-compile-pipeline" (both) for pccx-opt. Their options are the
/// compile options the pipelines read, spelled as pass options
/// (prefill-rows=4,attention=host,...), turned into CompileOptions by the
/// same parse functions as pccx-compile's command line.
void registerPipelines();

} // namespace pccx

#endif
