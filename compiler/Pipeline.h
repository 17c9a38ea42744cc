//===- Pipeline.h - the pass pipelines of pccx-compile ----------*- C++ -*-===//

#ifndef PCCX_COMPILER_PIPELINE_H
#define PCCX_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>

namespace pccx {

struct PipelineOptions {
  int64_t prefillRows = 16;
  /// Where attention runs: "npu" (KV caches as weight records) or "host".
  std::string attention = "npu";
  /// Target profile name (hw/machine/Targets.def), recorded as pccx.target.
  std::string target = "v002";
  bool foldNormGains = true;
  bool fuseLaurel = true;
  bool quantReport = false;
  /// Tensors kept in INT8 (a regular expression on checkpoint names).
  std::string int8Tensors;
  /// INT4 scale rule name (hw::parseScaleRule).
  std::string int4Scales = "search";
  /// INT4 rounding name (hw::parseRounding).
  std::string int4Rounding = "nearest";
  /// The AltUp stream and per-layer projections in INT4 (default INT8).
  bool int4StreamProjections = false;
};

/// Model passes on imported gemma3n IR: KV-sharing resolution, norm-gain
/// folding, LAuReL fusion, INT4/INT8 marking, AltUp stream placement.
void buildModelPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);
/// gemma3n -> pccx and the machine passes: constant cache, L2, async,
/// legality.
void buildLoweringPipeline(mlir::OpPassManager &pm, const PipelineOptions &o);

/// Registers "gemma3n-model-pipeline", "pccx-lowering-pipeline" and
/// "pccx-compile-pipeline" (both) for pccx-opt.
void registerPipelines();

} // namespace pccx

#endif
