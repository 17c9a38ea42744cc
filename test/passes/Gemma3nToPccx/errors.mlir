// RUN: pccx-opt %s --convert-gemma3n-to-pccx --split-input-file --verify-diagnostics

// The conversion needs resolved KV sharing.
// expected-error @+1 {{KV sharing is not resolved; run gemma3n-resolve-kv-sharing before convert-gemma3n-to-pccx}}
module attributes {gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
}

// -----

// The NPU multiplies quantized weights only.
module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  %t_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %t = gemma3n.quantize %t_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %g = gemma3n.weight "model.layers.0.mlp.gate_proj.weight" : tensor<128x64xbf16>
  %d = gemma3n.weight "model.layers.0.mlp.down_proj.weight" : tensor<64x128xbf16>
  %x = gemma3n.embed %tok, %t {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  // expected-error @+1 {{the NPU multiplies INT4 weights only, but this weight (model.layers.0.mlp.gate_proj.weight) is not quantized; run gemma3n-quantize-int4 first}}
  %y = gemma3n.ffn %x, %g, %g, %d {gemma3n.layer = 0 : i64, sparsity = 0.0 : f64} : (tensor<64xf32>, tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<64xf32>
  return %y : tensor<64xf32>
}
}

// -----

// A program must hand logits to the runtime.
module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) attributes {gemma3n.kind = "decode"} {
  // expected-error @+1 {{returns no logits}}
  return
}
}

// -----

// A cache write needs a cache argument.
module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>, %c: tensor<32x32xf32>) -> tensor<32x32xf32> attributes {gemma3n.kind = "decode"} {
  %t_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x32xbf16>
  %t = gemma3n.quantize %t_w {scheme = "int4_per_row"} : (tensor<512x32xbf16>) -> tensor<512x32xf32>
  %x = gemma3n.embed %tok, %t {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x32xf32>) -> tensor<32xf32>
  // expected-error @+1 {{writes a cache that is not a cache argument}}
  %w = gemma3n.kv_cache.write %c, %x, %pos {layer = 0 : i64} : (tensor<32x32xf32>, tensor<32xf32>, tensor<1xi32>) -> tensor<32x32xf32>
  return %w : tensor<32x32xf32>
}
}

// -----

// Activations come from lowered ops, not from function arguments.
module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>, %x: tensor<64xf32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  // expected-error @+1 {{operand has no value on the NPU or the host (only token ids, positions and KV caches may be function arguments)}}
  %n = gemma3n.rms_norm %x {eps = 1.0e-6 : f32} : (tensor<64xf32>) -> tensor<64xf32>
  return %n : tensor<64xf32>
}
}
