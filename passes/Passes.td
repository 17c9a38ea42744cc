//===- Passes.td - pccx-compiler passes --------------------*- tablegen -*-===//
//
// Model passes work on gemma3n IR imported from a checkpoint (the module
// carries its config and checkpoint, dialects/Gemma3n/model/ModelInfo.h).
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
    #gemma3n.kv_sharing_resolved`; running it again changes nothing.
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
  let summary = "Mark projection weights as INT4 (or INT8) with per-row scales";
  let description = [{
    Wraps every weight operand that the default datatype policy quantizes
    (attention and FFN projections, LAuReL, per-layer-input gate and model
    projection, embedding tables; the AltUp stream projections and the
    per-layer projections) in gemma3n.quantize, after any folding already
    applied to it: INT4, or INT8 for the tensors whose checkpoint name
    (without the multimodal prefix) matches the `int8-weights` regular
    expression in full. The AltUp stream projections and the per-layer
    projections are INT8 unless `int4-stream-projections` is set. With
    `quant-report`, the relative quantization
    error of each tensor, ||W - Q(W)|| / ||W|| over its effective values,
    is computed from the checkpoint and emitted as a remark on the weight.
  }];
  let options = [
    Option<"quantReport", "quant-report", "bool",
           "::pccx::compile_defaults::quantReport",
           "Emit the per-tensor relative quantization error as remarks">,
    Option<"int8Weights", "int8-weights", "std::string",
           "::pccx::compile_defaults::int8Weights",
           "Keep the tensors whose name matches this regular expression in "
           "INT8">,
    Option<"int4Scales", "int4-scales", "::pccx::hw::ScaleRule",
           "::pccx::compile_defaults::int4Scales",
           "INT4 scale rule: search or absmax (hw/numerics/Quantize.h)",
           "::pccx::ChoiceValues<::pccx::hw::ScaleRule>()">,
    Option<"int4Rounding", "int4-rounding", "::pccx::hw::Rounding",
           "::pccx::compile_defaults::int4Rounding",
           "INT4 rounding: nearest, or gptq (the emitter then needs "
           "calibration statistics, hw/numerics/Gptq.h)",
           "::pccx::ChoiceValues<::pccx::hw::Rounding>()">,
    Option<"int4Group", "int4-group", "int64_t",
           "::pccx::compile_defaults::int4Group",
           "Columns per INT4 scale: 0 for one scale per row, else a "
           "multiple of 32 (hw/numerics/Quantize.h)">,
    Option<"int4StreamProjections", "int4-stream-projections", "bool",
           "::pccx::compile_defaults::int4StreamProjections",
           "Quantize the AltUp stream projections and the per-layer "
           "projections to INT4 instead of INT8">,
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

def PlaceAltUpStreams : Pass<"gemma3n-place-altup-streams", "mlir::ModuleOp"> {
  let summary = "Update the AltUp streams in place where nothing else reads them";
  let description = [{
    AltUp predict, correct and the per-layer-input injection each produce a
    new [A, H] stack of streams from the previous one. Where the previous
    stack (and every stream view of it) has no later reader, the op is
    marked `in_place`: the lowering then writes the result over its input
    in the host window instead of into a fresh region, and the injection
    writes only streams 1 .. A-1 (the active stream 0 is never touched).
    This bounds the window the streams need to one stack per layer.
  }];
}

def ConvertGemma3nToPccx
    : Pass<"convert-gemma3n-to-pccx", "mlir::ModuleOp"> {
  let summary = "Partition gemma3n functions into pccx programs";
  let description = [{
    Each gemma3n function (decode_step, prefill) becomes a pccx.program:
    INT4 projections run as GEMV (one token) or GEMM (prefill rows), the
    attention softmax as findemax GEMV / EXP / REDUCE_SUM / SCALE, GELU on
    the SFU; everything the v002 ISA cannot express becomes a
    pccx.host.kernel with the MEMCPY round trips it costs. L2 buffers and
    host-window buffers stay symbolic and constant-cache entries unassigned
    (the machine passes place them). Ops are lowered by family
    (passes/Gemma3nToPccx/) and grouped into one segment per decoder layer
    by their gemma3n.layer attribute. docs/lowering.md describes the partition. Requires
    resolved KV sharing and quantized projection weights. The module records
    the `target` option as `pccx.target`, which the machine passes consult.
    With `decode-batch` B > 1 the prefill function is lowered again as
    `decode_batch_<R>` programs, for R = B and each power of two below it:
    R rows that are independent sequences, each at its own position and
    reading and writing its own KV caches (key and value records named per
    row), so one pass over the weights decodes R tokens.
  }];
  let options = [
    Option<"prefillRows", "prefill-rows", "int64_t",
           "::pccx::compile_defaults::prefillRows",
           "Tokens per prefill step (GEMM rows)">,
    Option<"decodeBatch", "decode-batch", "int64_t",
           "::pccx::compile_defaults::decodeBatch",
           "Sequences per batched decode step; above 1 adds decode_batch_<R> "
           "programs of R independent rows (R = B and the powers of two "
           "below it)">,
    Option<"attention", "attention", "::pccx::Attention",
           "::pccx::compile_defaults::attention",
           "Where attention runs: npu (Q.K and P.V as GEMV/GEMM over KV "
           "caches kept as INT8 weight records in device memory) or host "
           "(dot products on the CPU over fp16/f32/int8 host caches)",
           "::pccx::ChoiceValues<::pccx::Attention>()">,
    Option<"target", "target", "::pccx::machine::Target",
           "::pccx::compile_defaults::target",
           "Target profile (hw/machine/Targets.def) recorded on the module "
           "as pccx.target, whose capacities the lowering and the machine "
           "passes then ask: v002 or v002-rtl",
           "::pccx::ChoiceValues<::pccx::machine::Target>()">,
  ];
  let dependentDialects = ["pccx::dialect::PccxDialect"];
}

def PlaceHostBuffers : Pass<"pccx-place-host-buffers", "mlir::ModuleOp"> {
  let summary = "Assign host-window words to pccx.host.buffer ops";
  let description = [{
    Replays each program's allocation events (every host buffer's `alloc`
    and `free` ordinals) in order, first fit over the host window (hw/machine
    host_window_words), and sets each buffer's `address`; buffers whose
    lifetimes do not overlap share words. A program that cannot fit is an
    error naming the buffer and the words live at that point. Afterwards
    MEMCPY `aux_addr` fields and the #pccx.region parameters of host
    kernels are window words, and the program's `window_words` attribute
    holds the high-water mark.
  }];
}

def AllocateConstants : Pass<"pccx-allocate-constants", "mlir::ModuleOp"> {
  let summary = "Assign constant-cache entries and insert MEMSETs";
  let description = [{
    Instructions name their shapes with `weight_shape` / `fmap_shape`
    ([a, b, c]) until this pass: each bank's 64 entries are managed as an
    LRU cache in program order, a MEMSET is inserted before the first use
    of a shape that is not resident (so layers reuse the entries their
    predecessors loaded), and shapes with `shape_patches` get a MEMSET of
    their own, carrying the patches, right before the instruction.
  }];
}

def AllocateL2 : Pass<"pccx-allocate-l2", "mlir::ModuleOp"> {
  let summary = "Assign L2 word addresses to buffers, reusing dead space";
  let description = [{
    A buffer is live from the first to the last instruction of its program
    that names it; buffers whose lifetimes do not overlap may share words.
    First fit over the L2 that exists (hw/machine); a program that cannot
    fit is an error naming the buffer, its size and the live buffers.
    Symbolic addresses in instructions become word addresses.
  }];
}

def ScheduleAsync : Pass<"pccx-schedule-async", "mlir::ModuleOp"> {
  let summary = "Issue MEMCPY and CVO asynchronously, sync before host work";
  let description = [{
    The Global Scheduler orders L2 accesses (docs/isa-semantics.md section
    10), so MEMCPY and CVO may be issued with `async`. The host may only
    read or write the host window once everything before has completed:
    a pccx.host.sync is placed before every host kernel that follows
    asynchronous instructions.
  }];
}

def VerifyLegality : Pass<"pccx-verify-legality", "mlir::ModuleOp"> {
  let summary = "Check that every instruction encodes as a v002 word and "
                "runs on the module's target";
  let description = [{
    Every L2 address resolved, every constant entry assigned, every field
    within its width with reserved bits zero, every patch naming a field
    of its instruction, and a pccx.host.sync between every instruction and
    a host kernel that follows it in its segment (the runtime waits for the
    NPU only there and at segment ends). Every instruction must also be one
    the module's target (`pccx.target`, v002 when absent) can run and
    computes as documented; an instruction that needs a capability the
    target lacks is refused at that op, naming the capability
    (hw/machine/Targets.def).
  }];
}

#endif
