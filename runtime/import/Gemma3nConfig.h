//===- Gemma3nConfig.h - Gemma 3n text decoder configuration ----*- C++ -*-===//
//
// The text-decoder part of a Hugging Face Gemma 3n config.json, normalised
// the way transformers' Gemma3nTextConfig does it (per-layer intermediate
// sizes, default layer-type pattern, default sparsity pattern, RoPE thetas
// from `rope_parameters` or the legacy fields), plus the checkpoint tensors
// such a config implies. Spec: gemma3n-text-reference.md, sections "Config",
// "Tensors" and "KV sharing".
//
// Plain C++17 without LLVM; errors are returned as values.
//
//===----------------------------------------------------------------------===//

#ifndef PCCX_RUNTIME_IMPORT_GEMMA3NCONFIG_H
#define PCCX_RUNTIME_IMPORT_GEMMA3NCONFIG_H

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pccx::import {

class Checkpoint;

enum class LayerType : uint8_t { Sliding, Full };

/// "sliding_attention" / "full_attention".
const char *layerTypeName(LayerType type);

/// Gemma 3n text-decoder hyper-parameters. Member defaults are the defaults
/// of transformers' Gemma3nTextConfig (the E4B model); the per-layer vectors
/// are filled by normalize().
struct Gemma3nTextConfig {
  int64_t vocab_size = 262400;
  int64_t vocab_size_per_layer_input = 262144;
  int64_t hidden_size = 2048;
  int64_t hidden_size_per_layer_input = 256;
  int64_t num_hidden_layers = 35;
  /// One entry per layer.
  std::vector<int64_t> intermediate_size;
  int64_t num_attention_heads = 8;
  int64_t num_key_value_heads = 2;
  int64_t head_dim = 256;
  /// One entry per layer.
  std::vector<LayerType> layer_types;
  int64_t sliding_window = 512;
  double rope_theta_full = 1000000.0;
  double rope_theta_sliding = 10000.0;
  double rms_norm_eps = 1e-6;
  /// Absent (JSON null) means the logits are not capped.
  std::optional<double> final_logit_softcapping = 30.0;
  /// One entry per layer; 0 means a dense FFN.
  std::vector<double> activation_sparsity;
  int64_t num_kv_shared_layers = 15;
  int64_t altup_num_inputs = 4;
  int64_t altup_active_idx = 0;
  std::optional<double> altup_coef_clip = 120.0;
  bool altup_correct_scale = true;
  int64_t laurel_rank = 64;
  /// Only tanh-approximated GELU spellings are accepted.
  std::string hidden_activation = "gelu_pytorch_tanh";
  /// Not a Gemma 3n field (attention uses scaling 1.0); kept when present.
  std::optional<double> query_pre_attn_scalar;
  int64_t max_position_embeddings = 32768;
  bool tie_word_embeddings = true;
  std::optional<int64_t> bos_token_id = 2;
  std::optional<int64_t> pad_token_id = 0;
  /// Empty when null; one entry when the config gives a single id.
  std::vector<int64_t> eos_token_id = {1};

  /// The MatFormer slice a config was cut with (runtime/import/MatFormer.h),
  /// as config.json records it: "matformer_slice": {"name",
  /// "layers_to_skip" (layers of the model it was cut from),
  /// "ffn_hidden_dims" (this config's intermediate_size)}. Absent for a
  /// model as trained.
  struct MatFormerRecord {
    std::string name;
    std::vector<int64_t> layersToSkip, ffnHiddenDims;
  };
  std::optional<MatFormerRecord> matformer_slice;

  /// HF's defaults with the per-layer vectors filled in.
  static Gemma3nTextConfig defaults();

  /// Fills empty per-layer vectors with HF's defaults for the current
  /// num_hidden_layers (intermediate size 16384, every fifth layer full
  /// attention, 0.95 sparsity on the first 10 layers when there are more
  /// than 10). Vectors that are already set are left alone.
  void normalize();

  /// Checks internal consistency. On failure returns false and sets
  /// `*error` to "<field>: <problem>", field names prefixed by
  /// `fieldPrefix` (e.g. "text_config.").
  bool validate(std::string *error, const std::string &fieldPrefix = "") const;

  /// Layers [firstKvSharedLayer(), num_hidden_layers) reuse another layer's
  /// keys and values.
  int64_t firstKvSharedLayer() const;
  bool isKvShared(int64_t layer) const;
  /// For a KV-shared layer, the last layer before firstKvSharedLayer() with
  /// the same layer type; -1 for a layer that computes its own keys and
  /// values (and for a shared layer with no such producer, which validate()
  /// rejects).
  int64_t kvSourceLayer(int64_t layer) const;
  /// The layer whose cache `layer` attends over: kvSourceLayer() for shared
  /// layers, `layer` itself otherwise.
  int64_t kvCacheLayer(int64_t layer) const;

  /// The gaussian top-k cutoff multiplier of a layer: Phi^-1(sparsity)
  /// (standard normal quantile), or 0 for a dense layer.
  double sparsityMultiplier(int64_t layer) const;

  double ropeTheta(LayerType type) const {
    return type == LayerType::Full ? rope_theta_full : rope_theta_sliding;
  }

  /// The config as a bare text config.json (model_type gemma3n_text), every
  /// field explicit, RoPE in both the per-type and the legacy spelling.
  std::string toJson(int indent = 2) const;
  /// The same as a JSON value. Built here, where exceptions are enabled:
  /// code built without them must not instantiate json::parse (one
  /// instantiation wins at link time, and a throw there aborts).
  nlohmann::json toJsonValue() const;
};

/// Inverse CDF of the standard normal distribution, to double precision.
double normalQuantile(double p);

/// Parses a config.json: a multimodal Gemma3nConfig (its `text_config` is
/// used, vision and audio parts ignored; a missing or null text_config means
/// all defaults, as in transformers) or a bare Gemma3nTextConfig. In the
/// multimodal form, bos/eos/pad token ids and tie_word_embeddings fall back
/// to the wrapper's values when text_config omits them. The result has been
/// validate()d. Error messages start with `sourceName` and name the
/// offending field ("config.json: text_config.head_dim ...").
bool parseGemma3nConfig(const std::string &jsonText, Gemma3nTextConfig *config,
                        std::string *error,
                        const std::string &sourceName = "config.json");
/// Reads and parses the file at `path` (messages start with the path).
bool loadGemma3nConfig(const std::string &path, Gemma3nTextConfig *config,
                       std::string *error);

/// A tensor the text decoder needs, with its required shape.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

/// Every text-decoder tensor for `config`, names starting with `prefix`
/// ("model.language_model." in multimodal checkpoints, "model." in text-only
/// ones). An untied LM head is expected as "lm_head.weight" without prefix.
std::vector<ExpectedTensor> expectedTensors(const Gemma3nTextConfig &config,
                                            const std::string &prefix);

/// The default quantization policy: true for the projection matrices the
/// seed's datatype map stores as INT4 (attention and FFN projections,
/// LAuReL, per-layer-input gate and model projection, both embedding tables
/// and so the tied LM head); false for norm gains, AltUp coefficients,
/// router, and the matrices of isInt8ByDefault. `name` is relative to the
/// text-decoder prefix.
bool isInt4ByDefault(const std::string &name);

/// The matrices the NPU multiplies in INT8 by default: the AltUp stream
/// projections (`altup_projections.K`, `altup_unembed_projections.K`) and
/// the per-layer projections (`layers.N.per_layer_projection`). In INT4 they
/// cost measurable quality on trained weights (bench/README.md) for about
/// 1 % of the weight bytes per token.
bool isInt8ByDefault(const std::string &name);

/// Finds the text-decoder prefix of `checkpoint` by locating the token
/// embedding under "model.language_model.", "model." or no prefix.
bool detectTextPrefix(const Checkpoint &checkpoint, std::string *prefix,
                      std::string *error);

/// Checks that `checkpoint` holds every expected tensor with the expected
/// shape; reports the first missing or mismatching tensor by name.
bool validateCheckpoint(const Gemma3nTextConfig &config,
                        const Checkpoint &checkpoint, std::string *error);

} // namespace pccx::import

#endif // PCCX_RUNTIME_IMPORT_GEMMA3NCONFIG_H
