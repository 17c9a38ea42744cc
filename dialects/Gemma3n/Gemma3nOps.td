//===- Gemma3nOps.td - Gemma 3n model-level ops ------------*- tablegen -*-===//
//
// Shapes: H hidden, P per-layer-input width, L layers, A AltUp streams,
// V vocabulary, F FFN width, R LAuReL rank, S KV-cache slots, nq/nk heads,
// hd head dim, T tokens. An activation is tensor<Hxf32> (one position) or
// tensor<TxHxf32> (prefill); verifiers check feature dims against weights.
//===----------------------------------------------------------------------===//

#ifndef GEMMA3N_OPS_TD
#define GEMMA3N_OPS_TD

include "Gemma3nDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def G3_F32Tensor : RankedTensorOf<[F32]>;
def G3_WeightTensor : RankedTensorOf<[F32, F16, BF16]>;
def G3_TokenIds : RankedTensorOf<[I32]>;

class Gemma3n_PureOp<string mnemonic, list<Trait> traits = []>
    : Gemma3n_Op<mnemonic, traits # [Pure]> {
  let hasVerifier = 1;
}

def Gemma3n_WeightOp : Gemma3n_PureOp<"weight"> {
  let summary = "A checkpoint tensor, referenced by name";
  let description = [{
    Stands for the checkpoint tensor `name` with the result's shape and
    element type; the data stays in the mapped checkpoint (or, after weight
    transformations, in the compiler's weight store under `name`).
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs G3_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Gemma3n_ScaleWeightOp : Gemma3n_PureOp<"scale_weight"> {
  let summary = "A weight scaled per column and by a constant";
  let description = [{
    result[..., c] = weight[..., c] * (by ? by[c] : 1) * factor. Produced by
    passes that fold static gains into weights; evaluated row by row when
    weights are emitted, never materialised in the IR.
  }];
  let arguments = (ins G3_WeightTensor:$weight, Optional<G3_WeightTensor>:$by,
                       F32Attr:$factor);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$weight (`by` $by^)? attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_QuantizeOp : Gemma3n_PureOp<"quantize"> {
  let summary = "A weight as the target's quantized form represents it";
  let description = [{
    The values the NPU multiplies with, as floats. `scheme` "int4_per_row":
    per row, scale = max|row| / 7, q = clamp(round-half-away(w / scale),
    -8, 7), value q * scale (docs: numerics); "int4_per_row_search": the
    same codes range with the scale searched for the least row error
    (hw::quantizeRowInt4Search); "int8_per_row": absmax with 127 and
    [-127, 127]. The lowering emits the packed codes and scales of
    its operand.
  }];
  let arguments = (ins G3_WeightTensor:$weight, StrAttr:$scheme);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$weight attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_EmbedOp : Gemma3n_PureOp<"embed"> {
  let summary = "Scaled token embedding: table[id] * scale";
  let arguments = (ins G3_TokenIds:$tokens, G3_WeightTensor:$table, F32Attr:$scale);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$tokens `,` $table attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_PerLayerInputsOp : Gemma3n_PureOp<"per_layer_inputs"> {
  let summary = "Per-layer inputs from the token and the scaled embedding";
  let description = [{
    pli = (rms(x0 * proj^T * H^-1/2 reshaped [L, P], norm) +
           table[id'] * sqrt(P)) * 2^-1/2, with id' = id if id < rows(table)
    else 0. Result [L, P] (or [T, L, P]).
  }];
  let arguments = (ins G3_TokenIds:$tokens, G3_F32Tensor:$x0, G3_WeightTensor:$table,
                       G3_WeightTensor:$projection, G3_WeightTensor:$norm,
                       I64Attr:$num_layers, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$tokens `,` $x0 `,` $table `,` $projection `,` $norm attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_AltUpInitOp : Gemma3n_PureOp<"altup.init"> {
  let summary = "Builds the A streams: x0 and magnitude-matched projections";
  let arguments = (ins G3_F32Tensor:$x0, Variadic<G3_WeightTensor>:$projections);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$x0 (`,` $projections^)? attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_AltUpPredictOp : Gemma3n_PureOp<"altup.predict"> {
  let summary = "AltUp prediction: xs + C(router(xs[active])) . xs";
  let arguments = (ins G3_F32Tensor:$streams, G3_WeightTensor:$router_norm,
                       G3_WeightTensor:$router, G3_WeightTensor:$coefs,
                       I64Attr:$active, F32Attr:$eps,
                       OptionalAttr<F32Attr>:$coef_clip);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$streams `,` $router_norm `,` $router `,` $coefs attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_StreamOp : Gemma3n_PureOp<"altup.stream"> {
  let summary = "One stream of the AltUp stack";
  let arguments = (ins G3_F32Tensor:$streams, I64Attr:$index);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$streams `[` $index `]` attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_RMSNormOp : Gemma3n_PureOp<"rms_norm"> {
  let summary = "x / sqrt(mean(x^2) + eps) [* gain]";
  let description = [{
    Normalises over the last dimension; with `gain` the result is
    multiplied by it element-wise (the checkpoint's gain, used as is).
  }];
  let arguments = (ins G3_F32Tensor:$input, Optional<G3_WeightTensor>:$gain,
                       F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input (`,` $gain^)? attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_LaurelOp : Gemma3n_PureOp<"laurel"> {
  let summary = "LAuReL: x + rms((x . left^T) . right^T, norm)";
  let arguments = (ins G3_F32Tensor:$input, G3_WeightTensor:$left,
                       G3_WeightTensor:$right, G3_WeightTensor:$norm, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input `,` $left `,` $right `,` $norm attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_LaurelResidualOp : Gemma3n_PureOp<"laurel_residual"> {
  let summary = "Attention residual sum with the LAuReL branch merged in";
  let description = [{
    result = (act + xn) * residual_scale + rms(attn, attn_gain)
             + rms((xn . left^T) . right^T, laurel_gain).
    The fused form of combine(act, rms(attn, g), laurel(xn, left, right,
    g_l)) * s, with s folded into both gains (gemma3n-fuse-laurel).
  }];
  let arguments = (ins G3_F32Tensor:$act, G3_F32Tensor:$attn, G3_F32Tensor:$xn,
                       G3_WeightTensor:$left, G3_WeightTensor:$right,
                       G3_WeightTensor:$attn_gain, G3_WeightTensor:$laurel_gain,
                       F32Attr:$residual_scale, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$act `,` $attn `,` $xn `,` $left `,` $right `,` $attn_gain `,` $laurel_gain attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_KVProjectOp : Gemma3n_PureOp<"kv_project"> {
  let summary = "K (normed, rotated) and V (normed, no gain) rows of a token";
  let arguments = (ins G3_F32Tensor:$input, G3_TokenIds:$positions,
                       G3_WeightTensor:$k_proj, G3_WeightTensor:$v_proj,
                       G3_WeightTensor:$k_norm, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F64Attr:$rope_theta, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$k, G3_F32Tensor:$v);
  let assemblyFormat = "$input `,` $positions `,` $k_proj `,` $v_proj `,` $k_norm attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_KVCacheWriteOp : Gemma3n_PureOp<"kv_cache.write"> {
  let summary = "Writes K or V rows into a cache at the given positions";
  let description = [{
    cache[S, nk*hd]; rows[nk*hd] (or [T, nk*hd]) go to slots
    `positions mod S` (the cache is a ring of S slots).
  }];
  let arguments = (ins G3_F32Tensor:$cache, G3_F32Tensor:$rows,
                       G3_TokenIds:$positions, I64Attr:$layer);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$cache `,` $rows `,` $positions attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_AttentionOp : Gemma3n_PureOp<"attention"> {
  let summary = "Self-attention of the query positions over a KV cache";
  let description = [{
    q = rope(rms_per_head(x . q_proj^T, q_norm)); scores q.k^T with scaling
    1.0 over the cache positions p <= query position (and, with
    `sliding_window` W > 0, p > query position - W); softmax; . v; then
    . o_proj^T. `kv_layer` is the layer whose cache is read (itself, or the
    source layer of a KV-shared layer).
  }];
  let arguments = (ins G3_F32Tensor:$input, G3_TokenIds:$positions,
                       G3_WeightTensor:$q_proj, G3_WeightTensor:$q_norm,
                       G3_WeightTensor:$o_proj, G3_F32Tensor:$k_cache,
                       G3_F32Tensor:$v_cache, I64Attr:$layer, I64Attr:$kv_layer,
                       I64Attr:$num_heads, I64Attr:$num_kv_heads,
                       I64Attr:$head_dim, F64Attr:$rope_theta,
                       I64Attr:$sliding_window, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input `,` $positions `,` $q_proj `,` $q_norm `,` $o_proj `,` $k_cache `,` $v_cache attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_CombineOp : Gemma3n_PureOp<"combine"> {
  let summary = "(sum of inputs) * scale";
  let arguments = (ins Variadic<G3_F32Tensor>:$inputs, F32Attr:$scale);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_FFNOp : Gemma3n_PureOp<"ffn"> {
  let summary = "Gated FFN: (gelu_tanh(g') * (x . up^T)) . down^T";
  let description = [{
    g = x . gate^T; with `sparsity` s > 0, g' = relu(g - (mean(g) +
    std(g) * Phi^-1(s))) (gaussian top-k, std with divisor F), else g' = g.
  }];
  let arguments = (ins G3_F32Tensor:$input, G3_WeightTensor:$gate,
                       G3_WeightTensor:$up, G3_WeightTensor:$down, F64Attr:$sparsity);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input `,` $gate `,` $up `,` $down attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_AltUpCorrectOp : Gemma3n_PureOp<"altup.correct"> {
  let summary = "AltUp correction of the predicted streams by the layer output";
  let description = [{
    c = router(out) . clamp(coefs, +-clip)^T + 1;
    result[j] = pred[j] + c[j] * (out - pred[active]).
  }];
  let arguments = (ins G3_F32Tensor:$predictions, G3_F32Tensor:$output,
                       G3_WeightTensor:$router_norm, G3_WeightTensor:$router,
                       G3_WeightTensor:$coefs, I64Attr:$active, F32Attr:$eps,
                       OptionalAttr<F32Attr>:$coef_clip);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$predictions `,` $output `,` $router_norm `,` $router `,` $coefs attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_PLEInjectOp : Gemma3n_PureOp<"ple_inject"> {
  let summary = "Adds the layer's per-layer input to streams 1 .. A-1";
  let description = [{
    f = streams[active] (* correct_output_scale when present);
    g = gelu_tanh(f . gate^T) * pli[layer];
    streams[j] += rms(g . proj^T, post_norm) for j = 1 .. A-1 (as Hugging
    Face indexes it, whatever `active` is; stream 0 is never touched).
  }];
  let arguments = (ins G3_F32Tensor:$streams, G3_F32Tensor:$per_layer_inputs,
                       Optional<G3_WeightTensor>:$output_scale,
                       G3_WeightTensor:$gate, G3_WeightTensor:$proj,
                       G3_WeightTensor:$post_norm, I64Attr:$layer,
                       I64Attr:$active, F32Attr:$eps);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$streams `,` $per_layer_inputs (`scale` $output_scale^)? `,` $gate `,` $proj `,` $post_norm attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_AltUpCollapseOp : Gemma3n_PureOp<"altup.collapse"> {
  let summary = "Averages the streams after magnitude-matched unembedding";
  let arguments = (ins G3_F32Tensor:$streams, Variadic<G3_WeightTensor>:$projections);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$streams (`,` $projections^)? attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_LMHeadOp : Gemma3n_PureOp<"lm_head"> {
  let summary = "Logits: x . table^T";
  let arguments = (ins G3_F32Tensor:$input, G3_WeightTensor:$table);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input `,` $table attr-dict `:` functional-type(operands, results)";
}

def Gemma3n_SoftCapOp : Gemma3n_PureOp<"softcap"> {
  let summary = "cap * tanh(x / cap)";
  let arguments = (ins G3_F32Tensor:$input, F32Attr:$cap);
  let results = (outs G3_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

#endif
