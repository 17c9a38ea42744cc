//===- Gemma3nConfig.cpp - Gemma 3n text decoder configuration ------------===//
//
// Mirrors transformers' models/gemma3n/configuration_gemma3n.py
// (Gemma3nTextConfig, Gemma3nConfig) and the KV-sharing rule of
// modeling_gemma3n.py (Gemma3nTextAttention).
//
//===----------------------------------------------------------------------===//

#include "runtime/import/Gemma3nConfig.h"

#include "hw/support/InputFile.h"

#include "runtime/import/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cfloat>
#include <cmath>
#include <fstream>

using nlohmann::json;

namespace pccx::import {

namespace {

constexpr const char *kSliding = "sliding_attention";
constexpr const char *kFull = "full_attention";

bool isKnownActivation(const std::string &name) {
  // Both spellings are GELU with the tanh approximation in transformers.
  return name == "gelu_pytorch_tanh" || name == "gelu_new";
}

std::vector<LayerType> defaultLayerTypes(int64_t layers) {
  std::vector<LayerType> types;
  for (int64_t i = 0; i < layers; ++i)
    types.push_back((i + 1) % 5 == 0 ? LayerType::Full : LayerType::Sliding);
  return types;
}

std::vector<double> defaultSparsity(int64_t layers) {
  int64_t sparse = layers > 10 ? 10 : 0;
  std::vector<double> pattern(static_cast<size_t>(layers), 0.0);
  for (int64_t i = 0; i < sparse; ++i)
    pattern[static_cast<size_t>(i)] = 0.95;
  return pattern;
}

std::string num(double value) {
  json j = value;
  return j.dump();
}

// Reads fields of one JSON object, keeping the member default when a key is
// absent. Messages are "<source>: <prefix><key> <problem>".
class FieldReader {
public:
  FieldReader(const json &object, std::string source, std::string prefix,
              std::string *error)
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)),
        error_(error) {}

  bool fail(const std::string &field, const std::string &problem) {
    *error_ = source_ + ": " + prefix_ + field + " " + problem;
    return false;
  }

  const json *get(const char *key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  bool readInt(const char *key, int64_t *out) {
    const json *value = get(key);
    if (!value)
      return true;
    if (!value->is_number_integer())
      return fail(key, "must be an integer, got " + value->dump());
    if (value->is_number_unsigned() &&
        value->get<uint64_t>() > uint64_t(INT64_MAX))
      return fail(key, "is out of range");
    *out = value->get<int64_t>();
    return true;
  }

  bool readOptInt(const char *key, std::optional<int64_t> *out) {
    const json *value = get(key);
    if (value && value->is_null()) {
      out->reset();
      return true;
    }
    int64_t v = out->value_or(0);
    if (!readInt(key, &v))
      return false;
    if (value)
      *out = v;
    return true;
  }

  bool readDouble(const char *key, double *out) {
    const json *value = get(key);
    if (!value)
      return true;
    if (!value->is_number())
      return fail(key, "must be a number, got " + value->dump());
    // The compiler computes in float: a value float cannot hold would turn
    // into infinity (and a bundle the runtime refuses) much later.
    const double v = value->get<double>();
    if (!std::isfinite(v) || std::fabs(v) > double(FLT_MAX))
      return fail(key, "is " + value->dump() +
                           ", outside the range of a 32-bit float");
    *out = v;
    return true;
  }

  bool readOptDouble(const char *key, std::optional<double> *out) {
    const json *value = get(key);
    if (value && value->is_null()) {
      out->reset();
      return true;
    }
    double v = out->value_or(0.0);
    if (!readDouble(key, &v))
      return false;
    if (value)
      *out = v;
    return true;
  }

  bool readBool(const char *key, bool *out) {
    const json *value = get(key);
    if (!value)
      return true;
    if (!value->is_boolean())
      return fail(key, "must be true or false, got " + value->dump());
    *out = value->get<bool>();
    return true;
  }

  bool readString(const char *key, std::string *out) {
    const json *value = get(key);
    if (!value)
      return true;
    if (!value->is_string())
      return fail(key, "must be a string, got " + value->dump());
    *out = value->get<std::string>();
    return true;
  }

  // eos_token_id: an int, a list of ints, or null.
  bool readIdList(const char *key, std::vector<int64_t> *out) {
    const json *value = get(key);
    if (!value)
      return true;
    out->clear();
    if (value->is_null())
      return true;
    if (value->is_number_integer()) {
      out->push_back(value->get<int64_t>());
      return true;
    }
    if (!value->is_array())
      return fail(key, "must be an integer or a list of integers, got " +
                           value->dump());
    for (const json &item : *value) {
      if (!item.is_number_integer())
        return fail(key, "must be an integer or a list of integers, got " +
                             value->dump());
      out->push_back(item.get<int64_t>());
    }
    return true;
  }

  const std::string &prefix() const { return prefix_; }

private:
  const json &object_;
  std::string source_;
  std::string prefix_;
  std::string *error_;
};

// rope_type must be absent or "default": the decoder implements plain RoPE.
bool checkRopeType(FieldReader &reader, const std::string &field,
                   const json &params) {
  auto it = params.find("rope_type");
  if (it == params.end())
    it = params.find("type");
  if (it == params.end() || it->is_null())
    return true;
  if (!it->is_string() || it->get<std::string>() != "default")
    return reader.fail(field, "has rope_type " + it->dump() +
                                  "; only default RoPE is supported");
  return true;
}

// Precedence as in Gemma3nTextConfig.convert_rope_params_to_dict: a theta in
// rope_parameters[type], else the legacy field (rope_theta for full layers,
// rope_local_base_freq for sliding ones), else the class default.
bool readRope(FieldReader &reader, Gemma3nTextConfig *config) {
  const json *scaling = reader.get("rope_scaling");
  if (scaling && !scaling->is_null()) {
    if (!scaling->is_object())
      return reader.fail("rope_scaling", "must be an object or null");
    if (!checkRopeType(reader, "rope_scaling", *scaling))
      return false;
  }
  std::optional<double> legacyFull, legacySliding;
  if (!reader.readOptDouble("rope_theta", &legacyFull) ||
      !reader.readOptDouble("rope_local_base_freq", &legacySliding))
    return false;
  config->rope_theta_full = legacyFull.value_or(1000000.0);
  config->rope_theta_sliding = legacySliding.value_or(10000.0);

  const json *params = reader.get("rope_parameters");
  if (!params || params->is_null())
    return true;
  if (!params->is_object())
    return reader.fail("rope_parameters", "must be an object or null");
  if (!params->contains(kFull) && !params->contains(kSliding) &&
      !params->empty())
    return reader.fail("rope_parameters",
                       "must be keyed by layer type (full_attention, "
                       "sliding_attention)");
  for (const char *type : {kFull, kSliding}) {
    auto it = params->find(type);
    if (it == params->end() || it->is_null())
      continue;
    std::string field = std::string("rope_parameters.") + type;
    if (!it->is_object())
      return reader.fail(field, "must be an object");
    if (!checkRopeType(reader, field, *it))
      return false;
    auto theta = it->find("rope_theta");
    if (theta == it->end() || theta->is_null())
      continue;
    if (!theta->is_number())
      return reader.fail(field + ".rope_theta",
                         "must be a number, got " + theta->dump());
    (type == kFull ? config->rope_theta_full : config->rope_theta_sliding) =
        theta->get<double>();
  }
  return true;
}

bool readTextConfig(FieldReader &reader, Gemma3nTextConfig *config) {
  Gemma3nTextConfig &c = *config;
  if (!reader.readInt("vocab_size", &c.vocab_size) ||
      !reader.readInt("vocab_size_per_layer_input",
                      &c.vocab_size_per_layer_input) ||
      !reader.readInt("hidden_size", &c.hidden_size) ||
      !reader.readInt("hidden_size_per_layer_input",
                      &c.hidden_size_per_layer_input) ||
      !reader.readInt("num_hidden_layers", &c.num_hidden_layers) ||
      !reader.readInt("num_attention_heads", &c.num_attention_heads) ||
      !reader.readInt("num_key_value_heads", &c.num_key_value_heads) ||
      !reader.readInt("head_dim", &c.head_dim) ||
      !reader.readInt("sliding_window", &c.sliding_window) ||
      !reader.readDouble("rms_norm_eps", &c.rms_norm_eps) ||
      !reader.readOptDouble("final_logit_softcapping",
                            &c.final_logit_softcapping) ||
      !reader.readInt("num_kv_shared_layers", &c.num_kv_shared_layers) ||
      !reader.readInt("altup_num_inputs", &c.altup_num_inputs) ||
      !reader.readInt("altup_active_idx", &c.altup_active_idx) ||
      !reader.readOptDouble("altup_coef_clip", &c.altup_coef_clip) ||
      !reader.readBool("altup_correct_scale", &c.altup_correct_scale) ||
      !reader.readInt("laurel_rank", &c.laurel_rank) ||
      !reader.readString("hidden_activation", &c.hidden_activation) ||
      !reader.readOptDouble("query_pre_attn_scalar",
                            &c.query_pre_attn_scalar) ||
      !reader.readInt("max_position_embeddings", &c.max_position_embeddings) ||
      !reader.readBool("tie_word_embeddings", &c.tie_word_embeddings) ||
      !reader.readOptInt("bos_token_id", &c.bos_token_id) ||
      !reader.readOptInt("pad_token_id", &c.pad_token_id) ||
      !reader.readIdList("eos_token_id", &c.eos_token_id))
    return false;

  if (c.num_hidden_layers <= 0)
    return reader.fail("num_hidden_layers",
                       "must be positive, got " +
                           std::to_string(c.num_hidden_layers));
  size_t layers = static_cast<size_t>(c.num_hidden_layers);

  bool attentionBias = false;
  if (!reader.readBool("attention_bias", &attentionBias))
    return false;
  if (attentionBias)
    return reader.fail("attention_bias", "is true; attention projections "
                                         "with biases are not supported");

  // intermediate_size: one value for all layers or one per layer.
  c.intermediate_size.clear();
  if (const json *value = reader.get("intermediate_size")) {
    if (value->is_number_integer()) {
      c.intermediate_size.assign(layers, value->get<int64_t>());
    } else if (value->is_array()) {
      for (const json &item : *value) {
        if (!item.is_number_integer())
          return reader.fail("intermediate_size",
                             "must be an integer or a list of integers");
        c.intermediate_size.push_back(item.get<int64_t>());
      }
    } else {
      return reader.fail("intermediate_size",
                         "must be an integer or a list of integers, got " +
                             value->dump());
    }
  } else {
    c.intermediate_size.assign(layers, 16384);
  }

  // layer_types: null or absent selects the 4-sliding, 1-full pattern.
  c.layer_types.clear();
  const json *types = reader.get("layer_types");
  if (!types || types->is_null()) {
    c.layer_types = defaultLayerTypes(c.num_hidden_layers);
  } else {
    if (!types->is_array())
      return reader.fail("layer_types", "must be a list of strings");
    for (size_t i = 0; i < types->size(); ++i) {
      const json &item = (*types)[i];
      std::string field = "layer_types[" + std::to_string(i) + "]";
      if (!item.is_string())
        return reader.fail(field, "must be a string, got " + item.dump());
      std::string name = item.get<std::string>();
      if (name == kSliding)
        c.layer_types.push_back(LayerType::Sliding);
      else if (name == kFull)
        c.layer_types.push_back(LayerType::Full);
      else
        return reader.fail(field, "is '" + name +
                                      "'; only sliding_attention and "
                                      "full_attention are supported");
    }
  }

  // activation_sparsity_pattern: null or absent selects 0.95 on the first
  // 10 layers when there are more than 10; otherwise one value per layer
  // (transformers takes len() of it, so a bare number is an error there too).
  c.activation_sparsity.clear();
  const json *sparsity = reader.get("activation_sparsity_pattern");
  if (!sparsity || sparsity->is_null()) {
    c.activation_sparsity = defaultSparsity(c.num_hidden_layers);
  } else {
    if (!sparsity->is_array())
      return reader.fail("activation_sparsity_pattern",
                         "must be a list with one value per layer, got " +
                             sparsity->dump());
    for (const json &item : *sparsity) {
      if (!item.is_number())
        return reader.fail("activation_sparsity_pattern",
                           "must be a list of numbers");
      c.activation_sparsity.push_back(item.get<double>());
    }
  }

  // matformer_slice: the record of a MatFormer slice (MatFormer.h).
  c.matformer_slice.reset();
  if (const json *slice = reader.get("matformer_slice");
      slice && !slice->is_null()) {
    if (!slice->is_object())
      return reader.fail("matformer_slice", "must be an object");
    Gemma3nTextConfig::MatFormerRecord record;
    auto ints = [&](const char *key, std::vector<int64_t> *out) {
      auto it = slice->find(key);
      if (it == slice->end() || !it->is_array())
        return reader.fail(std::string("matformer_slice.") + key,
                           "must be a list of integers");
      for (const json &item : *it) {
        if (!item.is_number_integer())
          return reader.fail(std::string("matformer_slice.") + key,
                             "must be a list of integers");
        out->push_back(item.get<int64_t>());
      }
      return true;
    };
    auto name = slice->find("name");
    if (name == slice->end() || !name->is_string())
      return reader.fail("matformer_slice.name", "must be a string");
    record.name = name->get<std::string>();
    if (!ints("layers_to_skip", &record.layersToSkip) ||
        !ints("ffn_hidden_dims", &record.ffnHiddenDims))
      return false;
    c.matformer_slice = std::move(record);
  }

  return readRope(reader, config);
}

} // namespace

const char *layerTypeName(LayerType type) {
  return type == LayerType::Full ? kFull : kSliding;
}

Gemma3nTextConfig Gemma3nTextConfig::defaults() {
  Gemma3nTextConfig config;
  config.normalize();
  return config;
}

void Gemma3nTextConfig::normalize() {
  if (num_hidden_layers <= 0)
    return;
  size_t layers = static_cast<size_t>(num_hidden_layers);
  if (intermediate_size.empty())
    intermediate_size.assign(layers, 16384);
  if (layer_types.empty())
    layer_types = defaultLayerTypes(num_hidden_layers);
  if (activation_sparsity.empty())
    activation_sparsity = defaultSparsity(num_hidden_layers);
}

bool Gemma3nTextConfig::validate(std::string *error,
                                 const std::string &fieldPrefix) const {
  auto fail = [&](const std::string &field, const std::string &problem) {
    *error = fieldPrefix + field + " " + problem;
    return false;
  };
  // Upper bounds far above any Gemma 3n (vocabulary 262400, hidden 2048
  // to 2560, 30 to 35 layers) keep every size the compiler derives from them
  // (products of three such values) inside 64 bits and allocations bounded.
  auto positive = [&](const char *field, int64_t value, int log2Max) {
    if (value <= 0)
      return fail(field, "must be positive, got " + std::to_string(value));
    if (value > (int64_t(1) << log2Max))
      return fail(field, "is " + std::to_string(value) +
                             ", above the limit of 2^" +
                             std::to_string(log2Max));
    return true;
  };
  if (!positive("vocab_size", vocab_size, 24) ||
      !positive("vocab_size_per_layer_input", vocab_size_per_layer_input, 24) ||
      !positive("hidden_size", hidden_size, 16) ||
      !positive("hidden_size_per_layer_input", hidden_size_per_layer_input,
                16) ||
      !positive("num_hidden_layers", num_hidden_layers, 10) ||
      !positive("num_attention_heads", num_attention_heads, 10) ||
      !positive("num_key_value_heads", num_key_value_heads, 10) ||
      !positive("head_dim", head_dim, 12) ||
      !positive("sliding_window", sliding_window, 31) ||
      !positive("altup_num_inputs", altup_num_inputs, 6) ||
      !positive("laurel_rank", laurel_rank, 14) ||
      !positive("max_position_embeddings", max_position_embeddings, 31))
    return false;

  if (num_attention_heads % num_key_value_heads != 0)
    return fail("num_attention_heads",
                "(" + std::to_string(num_attention_heads) +
                    ") is not a multiple of num_key_value_heads (" +
                    std::to_string(num_key_value_heads) + ")");
  // transformers' validate_architecture() requires this as well.
  if (hidden_size % num_attention_heads != 0)
    return fail("hidden_size", "(" + std::to_string(hidden_size) +
                                   ") is not a multiple of "
                                   "num_attention_heads (" +
                                   std::to_string(num_attention_heads) + ")");
  if (head_dim % 2 != 0)
    return fail("head_dim", "(" + std::to_string(head_dim) +
                                ") must be even for rotary embeddings");

  size_t layers = static_cast<size_t>(num_hidden_layers);
  auto count = [&](const char *field, size_t entries) {
    if (entries == layers)
      return true;
    return fail(field, "has " + std::to_string(entries) +
                           " entries but num_hidden_layers is " +
                           std::to_string(num_hidden_layers));
  };
  if (!count("intermediate_size", intermediate_size.size()) ||
      !count("layer_types", layer_types.size()) ||
      !count("activation_sparsity_pattern", activation_sparsity.size()))
    return false;
  for (size_t i = 0; i < layers; ++i) {
    std::string index = "[" + std::to_string(i) + "]";
    if (intermediate_size[i] <= 0)
      return fail("intermediate_size" + index,
                  "must be positive, got " +
                      std::to_string(intermediate_size[i]));
    if (intermediate_size[i] > (int64_t(1) << 20))
      return fail("intermediate_size" + index,
                  "is " + std::to_string(intermediate_size[i]) +
                      ", above the limit of 2^20");
    double s = activation_sparsity[i];
    if (!(s >= 0.0 && s < 1.0))
      return fail("activation_sparsity_pattern" + index,
                  "is " + num(s) + "; it must be in [0, 1)");
  }

  // The compiler computes in float: a value above FLT_MAX would become
  // infinity (whichever spelling of the field it was read from).
  auto positiveReal = [&](const std::string &field, double value) {
    if (std::isfinite(value) && value > 0.0 && value <= double(FLT_MAX))
      return true;
    return fail(field, "must be a positive number a 32-bit float holds, got " +
                           num(value));
  };
  if (!positiveReal("rope_parameters.full_attention.rope_theta",
                    rope_theta_full) ||
      !positiveReal("rope_parameters.sliding_attention.rope_theta",
                    rope_theta_sliding) ||
      !positiveReal("rms_norm_eps", rms_norm_eps))
    return false;
  if (final_logit_softcapping &&
      !positiveReal("final_logit_softcapping", *final_logit_softcapping))
    return false;
  if (altup_coef_clip && !positiveReal("altup_coef_clip", *altup_coef_clip))
    return false;
  if (query_pre_attn_scalar &&
      !positiveReal("query_pre_attn_scalar", *query_pre_attn_scalar))
    return false;

  if (altup_active_idx < 0 || altup_active_idx >= altup_num_inputs)
    return fail("altup_active_idx", "(" + std::to_string(altup_active_idx) +
                                        ") must be in [0, altup_num_inputs = " +
                                        std::to_string(altup_num_inputs) + ")");

  if (!isKnownActivation(hidden_activation))
    return fail("hidden_activation",
                "'" + hidden_activation +
                    "' is not supported (expected gelu_pytorch_tanh)");

  if (num_kv_shared_layers < 0 || num_kv_shared_layers >= num_hidden_layers)
    return fail("num_kv_shared_layers",
                "(" + std::to_string(num_kv_shared_layers) +
                    ") must be in [0, num_hidden_layers = " +
                    std::to_string(num_hidden_layers) + ")");
  for (int64_t i = firstKvSharedLayer(); i < num_hidden_layers; ++i)
    if (kvSourceLayer(i) < 0)
      return fail("num_kv_shared_layers",
                  "(" + std::to_string(num_kv_shared_layers) +
                      ") makes layer " + std::to_string(i) + " (" +
                      layerTypeName(layer_types[size_t(i)]) +
                      ") KV-shared, but no layer before " +
                      std::to_string(firstKvSharedLayer()) +
                      " has that type to share with");

  auto token = [&](const char *field, int64_t id) {
    if (id >= 0 && id < vocab_size)
      return true;
    return fail(field, "(" + std::to_string(id) +
                           ") is outside the vocabulary [0, " +
                           std::to_string(vocab_size) + ")");
  };
  if ((bos_token_id && !token("bos_token_id", *bos_token_id)) ||
      (pad_token_id && !token("pad_token_id", *pad_token_id)))
    return false;
  for (int64_t id : eos_token_id)
    if (!token("eos_token_id", id))
      return false;
  if (matformer_slice) {
    if (matformer_slice->ffnHiddenDims != intermediate_size)
      return fail("matformer_slice.ffn_hidden_dims",
                  "must equal intermediate_size (the kept layers' widths)");
    for (size_t i = 0; i < matformer_slice->layersToSkip.size(); ++i)
      if (matformer_slice->layersToSkip[i] < 0 ||
          (i && matformer_slice->layersToSkip[i] <=
                    matformer_slice->layersToSkip[i - 1]))
        return fail("matformer_slice.layers_to_skip",
                    "must be increasing layer indices");
  }
  return true;
}

int64_t Gemma3nTextConfig::firstKvSharedLayer() const {
  return num_hidden_layers - num_kv_shared_layers;
}

bool Gemma3nTextConfig::isKvShared(int64_t layer) const {
  int64_t first = firstKvSharedLayer();
  // With first == 0 no layer could produce a cache; transformers (since the
  // `first > 0` guard) then shares nothing, and validate() rejects it.
  return first > 0 && layer >= first && layer < num_hidden_layers;
}

int64_t Gemma3nTextConfig::kvSourceLayer(int64_t layer) const {
  if (!isKvShared(layer) || size_t(layer) >= layer_types.size())
    return -1;
  LayerType type = layer_types[size_t(layer)];
  for (int64_t j = firstKvSharedLayer() - 1; j >= 0; --j)
    if (layer_types[size_t(j)] == type)
      return j;
  return -1;
}

double normalQuantile(double p) {
  // Phi^-1(p) = sqrt(2) * erfinv(2p - 1): Giles' single-precision
  // approximation as a start, then Newton steps on std::erf.
  double y = 2 * p - 1;
  double x = 0;
  double w = -std::log((1.0 - y) * (1.0 + y));
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844,
                     0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                     2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 4; ++i) {
    double err = std::erf(x) - y;
    x -= err / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return std::sqrt(2.0) * x;
}

double Gemma3nTextConfig::sparsityMultiplier(int64_t layer) const {
  double s = size_t(layer) < activation_sparsity.size()
                 ? activation_sparsity[size_t(layer)]
                 : 0.0;
  return s > 0 ? normalQuantile(s) : 0.0;
}

int64_t Gemma3nTextConfig::kvCacheLayer(int64_t layer) const {
  int64_t source = kvSourceLayer(layer);
  return source >= 0 ? source : layer;
}

std::string Gemma3nTextConfig::toJson(int indent) const {
  nlohmann::ordered_json j;
  j["model_type"] = "gemma3n_text";
  j["architectures"] = {"Gemma3nForCausalLM"};
  j["vocab_size"] = vocab_size;
  j["vocab_size_per_layer_input"] = vocab_size_per_layer_input;
  j["hidden_size"] = hidden_size;
  j["hidden_size_per_layer_input"] = hidden_size_per_layer_input;
  j["num_hidden_layers"] = num_hidden_layers;
  j["intermediate_size"] = intermediate_size;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  std::vector<std::string> types;
  for (LayerType type : layer_types)
    types.push_back(layerTypeName(type));
  j["layer_types"] = types;
  j["sliding_window"] = sliding_window;
  j["rope_parameters"] = {
      {kFull, {{"rope_type", "default"}, {"rope_theta", rope_theta_full}}},
      {kSliding,
       {{"rope_type", "default"}, {"rope_theta", rope_theta_sliding}}}};
  // The legacy spellings keep older transformers releases reading it.
  j["rope_theta"] = rope_theta_full;
  j["rope_local_base_freq"] = rope_theta_sliding;
  j["rms_norm_eps"] = rms_norm_eps;
  j["final_logit_softcapping"] =
      final_logit_softcapping ? json(*final_logit_softcapping) : json();
  j["activation_sparsity_pattern"] = activation_sparsity;
  j["num_kv_shared_layers"] = num_kv_shared_layers;
  j["altup_num_inputs"] = altup_num_inputs;
  j["altup_active_idx"] = altup_active_idx;
  j["altup_coef_clip"] = altup_coef_clip ? json(*altup_coef_clip) : json();
  j["altup_correct_scale"] = altup_correct_scale;
  j["laurel_rank"] = laurel_rank;
  j["hidden_activation"] = hidden_activation;
  if (query_pre_attn_scalar)
    j["query_pre_attn_scalar"] = *query_pre_attn_scalar;
  j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["attention_bias"] = false;
  j["bos_token_id"] = bos_token_id ? json(*bos_token_id) : json();
  j["pad_token_id"] = pad_token_id ? json(*pad_token_id) : json();
  if (eos_token_id.empty())
    j["eos_token_id"] = nullptr;
  else if (eos_token_id.size() == 1)
    j["eos_token_id"] = eos_token_id.front();
  else
    j["eos_token_id"] = eos_token_id;
  if (matformer_slice)
    j["matformer_slice"] = {{"name", matformer_slice->name},
                            {"layers_to_skip", matformer_slice->layersToSkip},
                            {"ffn_hidden_dims", matformer_slice->ffnHiddenDims}};
  // Replacing invalid UTF-8 (only possible in hidden_activation) keeps this
  // from throwing.
  return j.dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

nlohmann::json Gemma3nTextConfig::toJsonValue() const {
  return json::parse(toJson(-1));
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

bool parseConfig(const std::string &text, Gemma3nTextConfig *out,
                 std::string *error, const std::string &source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    *error = source + ": not valid JSON: " + e.what();
    return false;
  }
  if (!root.is_object()) {
    *error = source + ": not a JSON object";
    return false;
  }

  FieldReader top(root, source, "", error);
  std::string modelType;
  if (!top.readString("model_type", &modelType))
    return false;
  bool wrapper;
  if (modelType == "gemma3n")
    wrapper = true;
  else if (modelType == "gemma3n_text")
    wrapper = false;
  else if (modelType.empty())
    wrapper = root.contains("text_config");
  else
    return top.fail("model_type",
                    "is '" + modelType + "', not gemma3n or gemma3n_text");

  // transformers builds a default text config when text_config is missing.
  static const json kEmpty = json::object();
  const json *textObject = &root;
  if (wrapper) {
    const json *text = top.get("text_config");
    if (text && !text->is_null() && !text->is_object())
      return top.fail("text_config", "must be a JSON object");
    textObject = (text && text->is_object()) ? text : &kEmpty;
  }
  FieldReader reader(*textObject, source, wrapper ? "text_config." : "", error);
  if (wrapper) {
    std::string innerType;
    if (!reader.readString("model_type", &innerType))
      return false;
    if (!innerType.empty() && innerType != "gemma3n_text")
      return reader.fail("model_type",
                         "is '" + innerType + "', not gemma3n_text");
  }

  Gemma3nTextConfig config;
  // Token ids and embedding tying may sit on the wrapper only; the text
  // config's own value wins when both are present.
  if (wrapper &&
      (!top.readBool("tie_word_embeddings", &config.tie_word_embeddings) ||
       !top.readOptInt("bos_token_id", &config.bos_token_id) ||
       !top.readOptInt("pad_token_id", &config.pad_token_id) ||
       !top.readIdList("eos_token_id", &config.eos_token_id)))
    return false;
  if (!readTextConfig(reader, &config))
    return false;

  std::string problem;
  if (!config.validate(&problem, reader.prefix())) {
    *error = source + ": " + problem;
    return false;
  }
  *out = std::move(config);
  return true;
}

} // namespace

bool parseGemma3nConfig(const std::string &jsonText, Gemma3nTextConfig *config,
                        std::string *error, const std::string &sourceName) {
  try {
    return parseConfig(jsonText, config, error, sourceName);
  } catch (const std::exception &e) {
    *error = sourceName + ": " + e.what();
    return false;
  }
}

bool loadGemma3nConfig(const std::string &path, Gemma3nTextConfig *config,
                       std::string *error) {
  std::string text;
  if (!support::readInputFile(path, support::kMaxJsonFileBytes, &text, error))
    return false;
  return parseGemma3nConfig(text, config, error, path);
}

//===----------------------------------------------------------------------===//
// Checkpoint tensors
//===----------------------------------------------------------------------===//

std::vector<ExpectedTensor> expectedTensors(const Gemma3nTextConfig &config,
                                            const std::string &prefix) {
  const int64_t H = config.hidden_size;
  const int64_t P = config.hidden_size_per_layer_input;
  const int64_t L = config.num_hidden_layers;
  const int64_t A = config.altup_num_inputs;
  const int64_t R = config.laurel_rank;
  const int64_t hd = config.head_dim;
  const int64_t q = config.num_attention_heads * hd;
  const int64_t kv = config.num_key_value_heads * hd;

  std::vector<ExpectedTensor> out;
  auto add = [&](const std::string &name, std::vector<int64_t> shape) {
    out.push_back({prefix + name, std::move(shape)});
  };
  add("embed_tokens.weight", {config.vocab_size, H});
  add("embed_tokens_per_layer.weight",
      {config.vocab_size_per_layer_input, L * P});
  add("per_layer_model_projection.weight", {L * P, H});
  add("per_layer_projection_norm.weight", {P});
  for (int64_t k = 0; k + 1 < A; ++k) {
    add("altup_projections." + std::to_string(k) + ".weight", {H, H});
    add("altup_unembed_projections." + std::to_string(k) + ".weight", {H, H});
  }
  add("norm.weight", {H});

  for (int64_t i = 0; i < L; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    const int64_t F = size_t(i) < config.intermediate_size.size()
                          ? config.intermediate_size[size_t(i)]
                          : 0;
    // Shared-KV layers still carry k/v projections in the checkpoint.
    add(l + "self_attn.q_proj.weight", {q, H});
    add(l + "self_attn.k_proj.weight", {kv, H});
    add(l + "self_attn.v_proj.weight", {kv, H});
    add(l + "self_attn.o_proj.weight", {H, q});
    add(l + "self_attn.q_norm.weight", {hd});
    add(l + "self_attn.k_norm.weight", {hd});
    add(l + "mlp.gate_proj.weight", {F, H});
    add(l + "mlp.up_proj.weight", {F, H});
    add(l + "mlp.down_proj.weight", {H, F});
    add(l + "input_layernorm.weight", {H});
    add(l + "post_attention_layernorm.weight", {H});
    add(l + "pre_feedforward_layernorm.weight", {H});
    add(l + "post_feedforward_layernorm.weight", {H});
    add(l + "altup.correct_output_scale", {H});
    add(l + "altup.correction_coefs.weight", {A, A});
    add(l + "altup.prediction_coefs.weight", {A * A, A});
    add(l + "altup.modality_router.weight", {A, H});
    add(l + "altup.router_norm.weight", {H});
    add(l + "laurel.linear_left.weight", {R, H});
    add(l + "laurel.linear_right.weight", {H, R});
    add(l + "laurel.post_laurel_norm.weight", {H});
    add(l + "per_layer_input_gate.weight", {P, H});
    add(l + "per_layer_projection.weight", {H, P});
    add(l + "post_per_layer_input_norm.weight", {H});
  }
  if (!config.tie_word_embeddings)
    out.push_back({"lm_head.weight", {config.vocab_size, H}});
  return out;
}

bool detectTextPrefix(const Checkpoint &checkpoint, std::string *prefix,
                      std::string *error) {
  static const char *const kPrefixes[] = {"model.language_model.", "model.",
                                          ""};
  std::string tried;
  for (const char *candidate : kPrefixes) {
    std::string name = std::string(candidate) + "embed_tokens.weight";
    if (checkpoint.find(name)) {
      *prefix = candidate;
      return true;
    }
    tried += (tried.empty() ? "" : ", ") + name;
  }
  *error = checkpoint.source() +
           ": no text-decoder token embedding found (looked for " + tried + ")";
  return false;
}

bool validateCheckpoint(const Gemma3nTextConfig &config,
                        const Checkpoint &checkpoint, std::string *error) {
  std::string prefix;
  if (!detectTextPrefix(checkpoint, &prefix, error))
    return false;
  for (const ExpectedTensor &expected : expectedTensors(config, prefix)) {
    const TensorView *view = checkpoint.find(expected.name);
    if (!view) {
      *error = checkpoint.source() + ": missing tensor '" + expected.name +
               "' (expected shape " + formatShape(expected.shape) + ")";
      return false;
    }
    if (view->shape != expected.shape) {
      *error = view->file + ": tensor '" + expected.name + "' has shape " +
               formatShape(view->shape) + " but the config expects " +
               formatShape(expected.shape);
      return false;
    }
    // Every dtype the reader admits (F32, F16, BF16) is a float the
    // decoder can convert; anything else never gets this far.
  }
  return true;
}

} // namespace pccx::import

namespace pccx::import {

bool isInt4ByDefault(const std::string &name) {
  static const char *const kInt4Suffixes[] = {
      "self_attn.q_proj.weight",     "self_attn.k_proj.weight",
      "self_attn.v_proj.weight",     "self_attn.o_proj.weight",
      "mlp.gate_proj.weight",        "mlp.up_proj.weight",
      "mlp.down_proj.weight",        "laurel.linear_left.weight",
      "laurel.linear_right.weight",  "per_layer_input_gate.weight",
  };
  if (name == "embed_tokens.weight" ||
      name == "embed_tokens_per_layer.weight" ||
      name == "per_layer_model_projection.weight" || name == "lm_head.weight")
    return true;
  if (name.compare(0, 7, "layers.") != 0)
    return false;
  for (const char *suffix : kInt4Suffixes) {
    size_t n = std::char_traits<char>::length(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0 &&
        name[name.size() - n - 1] == '.')
      return true;
  }
  return false;
}

bool isInt8ByDefault(const std::string &name) {
  static const char *const kLists[] = {"altup_projections.",
                                       "altup_unembed_projections."};
  static const std::string kWeight = ".weight";
  auto endsWithWeight = [&](size_t from) {
    return name.size() > from + kWeight.size() &&
           name.compare(name.size() - kWeight.size(), kWeight.size(),
                        kWeight) == 0 &&
           name.find_first_not_of("0123456789", from) ==
               name.size() - kWeight.size();
  };
  for (const char *list : kLists) {
    size_t n = std::char_traits<char>::length(list);
    if (name.compare(0, n, list) == 0 && endsWithWeight(n))
      return true;
  }
  // layers.N.per_layer_projection.weight
  static const std::string kLayers = "layers.", kPle = ".per_layer_projection";
  if (name.compare(0, kLayers.size(), kLayers) != 0)
    return false;
  size_t end = name.find_first_not_of("0123456789", kLayers.size());
  return end != std::string::npos && end > kLayers.size() &&
         name.compare(end, std::string::npos, kPle + kWeight) == 0;
}

} // namespace pccx::import
