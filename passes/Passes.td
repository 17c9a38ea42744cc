//===- Passes.td - pccx-compiler passes --------------------*- tablegen -*-===//
//
// Model passes work on gemma3n IR imported from a checkpoint (the module
// carries its config and checkpoint, compiler/model/ModelInfo.h).
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_PASSES_TD
#define PCCX_PASSES_TD

include "mlir/Pass/PassBase.td"

def ResolveKvSharing : Pass<"gemma3n-resolve-kv-sharing", "mlir::ModuleOp"> {
  let summary = "Make KV-shared layers read their source layer's cache";
  let description = [{
    From the config recorded in the module, each layer at or after
    num_hidden_layers - num_kv_shared_layers attends over the cache of the
    last earlier layer of the same attention type (Hugging Face's
    kv_shared_layer_index). Such a layer's K/V projection and cache writes
    are removed, and so are its cache arguments and results: only layers
    that own a cache keep one. Marks the module `gemma3n.kv_sharing =
    "resolved"`; running it again changes nothing.
  }];
  let dependentDialects = ["pccx::gemma3n::Gemma3nDialect"];
}

def FoldNormGains : Pass<"gemma3n-fold-norm-gains", "mlir::ModuleOp"> {
  let summary = "Fold static RMSNorm gains into the projections that follow";
  let description = [{
    W . (n * g) = (W * diag(g)) . n: where every user of a gained RMSNorm
    is a projection reading it as its input, the gain moves into the
    projection weights (gemma3n.scale_weight) and the norm loses its gain.
    Applies to the pre-feedforward norm (read only by the gate and up
    projections) and, when the LM head is not tied to the embedding, to the
    final norm. Norms whose output is also used un-projected (the input
    norm, which LAuReL adds back) are left alone: folding there is not
    exact.
  }];
  let dependentDialects = ["pccx::gemma3n::Gemma3nDialect"];
}

def QuantizeWeights : Pass<"gemma3n-quantize-int4", "mlir::ModuleOp"> {
  let summary = "Mark projection weights as INT4 with per-row scales";
  let description = [{
    Wraps every weight operand that the default datatype policy stores as
    INT4 (attention and FFN projections, LAuReL, per-layer-input gate and
    model projection, embedding tables) in gemma3n.quantize, after any
    folding already applied to it. With `report`, the relative
    quantization error of each tensor, ||W - Q(W)|| / ||W|| over its
    effective values, is computed from the checkpoint and emitted as a
    remark on the weight.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit the per-tensor relative quantization error as remarks">,
  ];
  let dependentDialects = ["pccx::gemma3n::Gemma3nDialect"];
}

def FuseLaurel : Pass<"gemma3n-fuse-laurel", "mlir::ModuleOp"> {
  let summary = "Merge the LAuReL branch into the attention residual sum";
  let description = [{
    x_attn = (act + rms(attn, g_post) + xn + rms(R . L . xn, g_laurel)) / sqrt 2
    becomes one gemma3n.laurel_residual op whose two norm gains absorb the
    1/sqrt 2 (exact: a norm's output scales with its gain). The lowering
    then computes the low-rank projection L . xn in the same GEMV pass as
    the Q/K/V projections of xn and accumulates all four terms into one
    destination, instead of three separate ops with their own round trips.
  }];
  let dependentDialects = ["pccx::gemma3n::Gemma3nDialect"];
}

#endif
