//===- ModelImporter.cpp - checkpoint to gemma3n IR -----------------------===//
//
// The op sequence mirrors docs/gemma3n-semantics.md step by step; the float
// reference (runtime/reference) computes the same thing independently.
//
//===----------------------------------------------------------------------===//

#include "dialects/Gemma3n/model/ModelImporter.h"


#include "dialects/Gemma3n/Gemma3nOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <map>

using namespace mlir;

namespace pccx {

namespace {

using namespace pccx::gemma3n;

/// Stamps every op inserted while a layer is being built with its layer
/// (kLayerAttr); weight ops stay unstamped (they are shared expressions).
struct LayerStamp : public OpBuilder::Listener {
  int64_t layer = -1;
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    if (layer >= 0 && !llvm::isa<WeightOp>(op))
      op->setAttr(kLayerAttr,
                  IntegerAttr::get(IntegerType::get(op->getContext(), 64),
                                   layer));
  }
};

class FunctionImporter {
public:
  FunctionImporter(MLIRContext &ctx, const LoadedCheckpoint &ckpt,
                   int64_t maxSeqLen, bool prefill)
      : ctx(ctx), b(&ctx), ckpt(ckpt), cfg(ckpt.config), maxSeqLen(maxSeqLen),
        prefill(prefill) {
    b.setListener(&stamp);
  }

  func::FuncOp build(ModuleOp module);

private:
  Type f32() { return b.getF32Type(); }
  /// An activation type: the feature dims, with a leading dynamic token
  /// dimension in the prefill function.
  RankedTensorType activation(ArrayRef<int64_t> features) {
    SmallVector<int64_t> shape;
    if (prefill)
      shape.push_back(ShapedType::kDynamic);
    shape.append(features.begin(), features.end());
    return RankedTensorType::get(shape, f32());
  }
  Location at(const std::string &module) {
    return NameLoc::get(b.getStringAttr(ckpt.prefix + module));
  }
  Location layerLoc(int64_t i, const char *module) {
    return at("layers." + std::to_string(i) + "." + module);
  }
  FloatAttr epsAttr() { return b.getF32FloatAttr(float(cfg.rms_norm_eps)); }
  IntegerAttr i64(int64_t v) { return b.getI64IntegerAttr(v); }

  /// The weight op of a tensor (relative to the prefix), created once per
  /// function at its entry.
  Value weight(const std::string &relative) {
    std::string name =
        relative == "lm_head.weight" ? relative : ckpt.prefix + relative;
    auto it = weights.find(name);
    if (it != weights.end())
      return it->second;
    const import::TensorView *view = ckpt.checkpoint->find(name);
    // loadCheckpoint() validated every expected tensor.
    assert(view && "tensor validated at load");
    Type element = view->dtype == import::DType::BF16  ? Type(b.getBF16Type())
                   : view->dtype == import::DType::F16 ? Type(b.getF16Type())
                                                       : Type(b.getF32Type());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(weightAnchor);
    Location loc = NameLoc::get(b.getStringAttr(name),
                                FileLineColLoc::get(&ctx, view->file, 0, 0));
    auto op = b.create<WeightOp>(
        loc, RankedTensorType::get(view->shape, element),
        b.getStringAttr(name));
    weights[name] = op.getResult();
    return op.getResult();
  }
  Value layerWeight(int64_t i, const char *suffix) {
    return weight("layers." + std::to_string(i) + "." + suffix);
  }

  MLIRContext &ctx;
  LayerStamp stamp;
  OpBuilder b;
  const LoadedCheckpoint &ckpt;
  const import::Gemma3nTextConfig &cfg;
  const int64_t maxSeqLen;
  bool prefill;
  std::map<std::string, Value> weights;
  /// Weight ops are inserted before this placeholder, which is erased once
  /// the function is complete.
  Operation *weightAnchor = nullptr;
};

func::FuncOp FunctionImporter::build(ModuleOp module) {
  const int64_t H = cfg.hidden_size, L = cfg.num_hidden_layers,
                P = cfg.hidden_size_per_layer_input, A = cfg.altup_num_inputs,
                V = cfg.vocab_size, hd = cfg.head_dim,
                kvDim = cfg.num_key_value_heads * hd, S = maxSeqLen;
  const uint64_t active = uint64_t(cfg.altup_active_idx);

  // Signature: tokens, positions, then (k, v) caches of every layer that
  // owns one; results: logits, then the updated caches in the same order.
  auto ids = RankedTensorType::get({prefill ? ShapedType::kDynamic : 1},
                                   b.getI32Type());
  auto cacheType = RankedTensorType::get({S, kvDim}, f32());
  // The import is literal: every layer projects and caches its own keys and
  // values, as the checkpoint's tensors allow. Which layers really share is
  // decided from the config by the kv-sharing resolution pass, which the
  // lowering requires (kKvSharingAttr).
  std::vector<int64_t> owners;
  for (int64_t i = 0; i < L; ++i)
    owners.push_back(i);
  SmallVector<Type> inputs = {ids, ids}, results = {activation({V})};
  for (size_t n = 0; n < owners.size() * 2; ++n) {
    inputs.push_back(cacheType);
    results.push_back(cacheType);
  }
  b.setInsertionPointToEnd(module.getBody());
  auto fn = b.create<func::FuncOp>(
      at(""), prefill ? "prefill" : "decode_step",
      b.getFunctionType(inputs, results));
  fn->setAttr(kFunctionKindAttr, b.getStringAttr(prefill ? "prefill" : "decode"));
  for (size_t n = 0; n < owners.size(); ++n)
    for (int kv = 0; kv < 2; ++kv) {
      unsigned arg = unsigned(2 + 2 * n + kv);
      fn.setArgAttr(arg, kCacheKindAttr, b.getStringAttr(kv ? "v" : "k"));
      fn.setArgAttr(arg, kCacheLayerAttr, i64(owners[n]));
    }
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0), positions = entry->getArgument(1);
  std::map<int64_t, std::pair<Value, Value>> caches;
  for (size_t n = 0; n < owners.size(); ++n)
    caches[owners[n]] = {entry->getArgument(unsigned(2 + 2 * n)),
                         entry->getArgument(unsigned(3 + 2 * n))};
  // Weight ops gather at the top of the entry block, in first-use order.
  auto anchor = b.create<gemma3n::CombineOp>(
      at(""), RankedTensorType::get({1}, f32()), ValueRange{},
      b.getF32FloatAttr(1));
  weightAnchor = anchor;
  b.setInsertionPointToEnd(entry);

  // Embedding, per-layer inputs, AltUp streams.
  Value x0 = b.create<EmbedOp>(at("embed_tokens"), activation({H}), tokens,
                               weight("embed_tokens.weight"),
                               b.getF32FloatAttr(float(std::sqrt(double(H)))));
  Value pli = b.create<PerLayerInputsOp>(
      at("embed_tokens_per_layer"), activation({L, P}), tokens, x0,
      weight("embed_tokens_per_layer.weight"),
      weight("per_layer_model_projection.weight"),
      weight("per_layer_projection_norm.weight"), i64(L), epsAttr());
  SmallVector<Value> projections;
  for (int64_t k = 0; k + 1 < A; ++k)
    projections.push_back(
        weight("altup_projections." + std::to_string(k) + ".weight"));
  Value xs = b.create<AltUpInitOp>(at("altup_projections"), activation({A, H}),
                                   x0, projections);

  const FloatAttr clip =
      cfg.altup_coef_clip ? b.getF32FloatAttr(float(*cfg.altup_coef_clip))
                          : FloatAttr();
  for (int64_t i = 0; i < L; ++i) {
    stamp.layer = i;
    auto w = [&](const char *suffix) { return layerWeight(i, suffix); };
    const bool sliding = cfg.layer_types[size_t(i)] == import::LayerType::Sliding;
    Value pred = b.create<AltUpPredictOp>(
        layerLoc(i, "altup.predict"), xs.getType(), xs,
        w("altup.router_norm.weight"), w("altup.modality_router.weight"),
        w("altup.prediction_coefs.weight"), i64(int64_t(active)), epsAttr(),
        FloatAttr()); // HF clamps prediction coefficients only in training
    Value act = b.create<StreamOp>(layerLoc(i, "altup.predict"),
                                   activation({H}), pred, i64(int64_t(active)));
    Value xn = b.create<RMSNormOp>(layerLoc(i, "input_layernorm"),
                                   act.getType(), act,
                                   w("input_layernorm.weight"), epsAttr());
    Value laurel = b.create<LaurelOp>(
        layerLoc(i, "laurel"), act.getType(), xn, w("laurel.linear_left.weight"),
        w("laurel.linear_right.weight"), w("laurel.post_laurel_norm.weight"),
        epsAttr());

    const double theta = cfg.ropeTheta(cfg.layer_types[size_t(i)]);
    {
      auto kv = b.create<KVProjectOp>(
          layerLoc(i, "self_attn"), activation({kvDim}), activation({kvDim}),
          xn, positions, w("self_attn.k_proj.weight"),
          w("self_attn.v_proj.weight"), w("self_attn.k_norm.weight"),
          i64(cfg.num_key_value_heads), i64(hd), b.getF64FloatAttr(theta),
          epsAttr());
      auto &[kc, vc] = caches[i];
      kc = b.create<KVCacheWriteOp>(layerLoc(i, "self_attn"), cacheType, kc,
                                    kv.getK(), positions, i64(i));
      vc = b.create<KVCacheWriteOp>(layerLoc(i, "self_attn"), cacheType, vc,
                                    kv.getV(), positions, i64(i));
    }
    auto &[kc, vc] = caches[i];
    Value attn = b.create<AttentionOp>(
        layerLoc(i, "self_attn"), act.getType(), xn, positions,
        w("self_attn.q_proj.weight"), w("self_attn.q_norm.weight"),
        w("self_attn.o_proj.weight"), kc, vc, i64(i), i64(i),
        i64(cfg.num_attention_heads), i64(cfg.num_key_value_heads), i64(hd),
        b.getF64FloatAttr(theta), i64(sliding ? cfg.sliding_window : 0),
        epsAttr());
    attn = b.create<RMSNormOp>(layerLoc(i, "post_attention_layernorm"),
                               act.getType(), attn,
                               w("post_attention_layernorm.weight"), epsAttr());
    Value xAttn = b.create<CombineOp>(
        layerLoc(i, "laurel"), act.getType(), ValueRange{act, attn, laurel},
        b.getF32FloatAttr(float(1.0 / std::sqrt(2.0))));
    Value ffIn = b.create<RMSNormOp>(layerLoc(i, "pre_feedforward_layernorm"),
                                     act.getType(), xAttn,
                                     w("pre_feedforward_layernorm.weight"),
                                     epsAttr());
    double sparsity = size_t(i) < cfg.activation_sparsity.size()
                          ? cfg.activation_sparsity[size_t(i)]
                          : 0.0;
    Value ff = b.create<FFNOp>(layerLoc(i, "mlp"), act.getType(), ffIn,
                               w("mlp.gate_proj.weight"),
                               w("mlp.up_proj.weight"),
                               w("mlp.down_proj.weight"),
                               b.getF64FloatAttr(sparsity));
    ff = b.create<RMSNormOp>(layerLoc(i, "post_feedforward_layernorm"),
                             act.getType(), ff,
                             w("post_feedforward_layernorm.weight"), epsAttr());
    Value out = b.create<CombineOp>(layerLoc(i, "mlp"), act.getType(),
                                    ValueRange{xAttn, ff}, b.getF32FloatAttr(1));
    Value corrected = b.create<AltUpCorrectOp>(
        layerLoc(i, "altup.correct"), xs.getType(), pred, out,
        w("altup.router_norm.weight"), w("altup.modality_router.weight"),
        w("altup.correction_coefs.weight"), i64(int64_t(active)), epsAttr(),
        clip);
    xs = b.create<PLEInjectOp>(
        layerLoc(i, "per_layer_input_gate"), xs.getType(), corrected, pli,
        cfg.altup_correct_scale ? w("altup.correct_output_scale") : Value(),
        w("per_layer_input_gate.weight"), w("per_layer_projection.weight"),
        w("post_per_layer_input_norm.weight"), i64(i), i64(int64_t(active)),
        epsAttr());
  }

  stamp.layer = -1;
  SmallVector<Value> unembed;
  for (int64_t k = 0; k + 1 < A; ++k)
    unembed.push_back(
        weight("altup_unembed_projections." + std::to_string(k) + ".weight"));
  Value h = b.create<AltUpCollapseOp>(at("altup_unembed_projections"),
                                      activation({H}), xs, unembed);
  h = b.create<RMSNormOp>(at("norm"), h.getType(), h, weight("norm.weight"),
                          epsAttr());
  Value logits = b.create<LMHeadOp>(
      cfg.tie_word_embeddings ? at("embed_tokens") : at("lm_head"),
      activation({V}), h,
      weight(cfg.tie_word_embeddings ? "embed_tokens.weight"
                                     : "lm_head.weight"));
  if (cfg.final_logit_softcapping)
    logits = b.create<SoftCapOp>(
        at("final_logit_softcapping"), logits.getType(), logits,
        b.getF32FloatAttr(float(*cfg.final_logit_softcapping)));
  SmallVector<Value> returned = {logits};
  for (int64_t owner : owners) {
    returned.push_back(caches[owner].first);
    returned.push_back(caches[owner].second);
  }
  b.create<func::ReturnOp>(at(""), returned);
  // Weight ops in first-use order (not in the unspecified order in which
  // call arguments were evaluated), so the output is the same with every
  // host compiler.
  llvm::SetVector<Operation *> ordered;
  fn.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (auto w = operand.getDefiningOp<WeightOp>())
        ordered.insert(w);
  });
  for (Operation *w : ordered)
    w->moveBefore(anchor);
  anchor->erase();
  return fn;
}

} // namespace

OwningOpRef<ModuleOp> importModel(MLIRContext &context,
                                  const LoadedCheckpoint &checkpoint,
                                  int64_t maxSeqLen,
                                  std::string *error) {
  context.loadDialect<gemma3n::Gemma3nDialect, func::FuncDialect>();
  if (maxSeqLen <= 0) {
    *error = "max-seq-len must be positive, got " +
             std::to_string(maxSeqLen);
    return nullptr;
  }
  OpBuilder b(&context);
  Location loc = FileLineColLoc::get(&context, checkpoint.dir + "/config.json",
                                     0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(
      kConfigAttr,
      configToAttr(b, checkpoint.config));
  // An absolute path, so the module can be processed from anywhere.
  SmallString<256> dir(checkpoint.dir);
  (void)llvm::sys::fs::make_absolute(dir);
  llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  (*module)->setAttr(kCheckpointAttr, b.getStringAttr(dir));
  (*module)->setAttr(kPrefixAttr, b.getStringAttr(checkpoint.prefix));
  FunctionImporter(context, checkpoint, maxSeqLen, /*prefill=*/false)
      .build(*module);
  FunctionImporter(context, checkpoint, maxSeqLen, /*prefill=*/true)
      .build(*module);
  if (failed(verify(*module))) {
    *error = "internal error: the imported module does not verify";
    return nullptr;
  }
  return module;
}

} // namespace pccx
