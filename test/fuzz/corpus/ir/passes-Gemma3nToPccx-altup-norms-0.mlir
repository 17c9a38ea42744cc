module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %p0_w = gemma3n.weight "model.altup_projections.0.weight" : tensor<64x64xbf16>
  %p1_w = gemma3n.weight "model.altup_projections.1.weight" : tensor<64x64xbf16>
  %p2_w = gemma3n.weight "model.altup_projections.2.weight" : tensor<64x64xbf16>
  %rn_w = gemma3n.weight "model.layers.0.altup.router_norm.weight" : tensor<64xbf16>
  %router_w = gemma3n.weight "model.layers.0.altup.modality_router.weight" : tensor<4x64xbf16>
  %pc_w = gemma3n.weight "model.layers.0.altup.prediction_coefs.weight" : tensor<16x4xbf16>
  %cc_w = gemma3n.weight "model.layers.0.altup.correction_coefs.weight" : tensor<4x4xbf16>
  %g_w = gemma3n.weight "model.layers.0.input_layernorm.weight" : tensor<64xbf16>
  %u0_w = gemma3n.weight "model.altup_unembed_projections.0.weight" : tensor<64x64xbf16>
  %u1_w = gemma3n.weight "model.altup_unembed_projections.1.weight" : tensor<64x64xbf16>
  %u2_w = gemma3n.weight "model.altup_unembed_projections.2.weight" : tensor<64x64xbf16>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  %s = gemma3n.altup.init %x, %p0_w, %p1_w, %p2_w : (tensor<64xf32>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<4x64xf32>
  %pred = gemma3n.altup.predict %s, %rn_w, %router_w, %pc_w {active = 0 : i64, eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<4x64xf32>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<16x4xbf16>) -> tensor<4x64xf32>
  %act = gemma3n.altup.stream %pred[2] {gemma3n.layer = 0 : i64} : (tensor<4x64xf32>) -> tensor<64xf32>
  %xn = gemma3n.rms_norm %act, %g_w {eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<64xf32>, tensor<64xbf16>) -> tensor<64xf32>
  %sum = gemma3n.combine %act, %xn {gemma3n.layer = 0 : i64, scale = 5.0e-1 : f32} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %cor = gemma3n.altup.correct %pred, %sum, %rn_w, %router_w, %cc_w {active = 0 : i64, coef_clip = 1.2e2 : f32, eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<4x4xbf16>) -> tensor<4x64xf32>
  %h = gemma3n.altup.collapse %cor, %u0_w, %u1_w, %u2_w : (tensor<4x64xf32>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64xf32>
  %n = gemma3n.rms_norm %h {eps = 1.0e-6 : f32} : (tensor<64xf32>) -> tensor<64xf32>
  return %n : tensor<64xf32>
}
}
