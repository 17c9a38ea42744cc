module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>, %kcache: tensor<32x32xf32> {gemma3n.cache = "k", gemma3n.layer = 0 : i64}, %vcache: tensor<32x32xf32> {gemma3n.cache = "v", gemma3n.layer = 0 : i64}) -> (tensor<512xf32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {gemma3n.kind = "decode"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %qp_w = gemma3n.weight "model.layers.0.self_attn.q_proj.weight" : tensor<64x64xbf16>
  %qp = gemma3n.quantize %qp_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %kp_w = gemma3n.weight "model.layers.0.self_attn.k_proj.weight" : tensor<32x64xbf16>
  %kp = gemma3n.quantize %kp_w {scheme = "int4_per_row"} : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %vp_w = gemma3n.weight "model.layers.0.self_attn.v_proj.weight" : tensor<32x64xbf16>
  %vp = gemma3n.quantize %vp_w {scheme = "int4_per_row"} : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %op_w = gemma3n.weight "model.layers.0.self_attn.o_proj.weight" : tensor<64x64xbf16>
  %op = gemma3n.quantize %op_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %qn_w = gemma3n.weight "model.layers.0.self_attn.q_norm.weight" : tensor<16xbf16>
  %kn_w = gemma3n.weight "model.layers.0.self_attn.k_norm.weight" : tensor<16xbf16>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  %k, %v = gemma3n.kv_project %x, %pos, %kp, %vp, %kn_w {eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64, head_dim = 16 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e4 : f64} : (tensor<64xf32>, tensor<1xi32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<16xbf16>) -> (tensor<32xf32>, tensor<32xf32>)
  %kc = gemma3n.kv_cache.write %kcache, %k, %pos {gemma3n.layer = 0 : i64, layer = 0 : i64} : (tensor<32x32xf32>, tensor<32xf32>, tensor<1xi32>) -> tensor<32x32xf32>
  %vc = gemma3n.kv_cache.write %vcache, %v, %pos {gemma3n.layer = 0 : i64, layer = 0 : i64} : (tensor<32x32xf32>, tensor<32xf32>, tensor<1xi32>) -> tensor<32x32xf32>
  %a = gemma3n.attention %x, %pos, %qp, %qn_w, %op, %kc, %vc {eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64, head_dim = 16 : i64, kv_layer = 0 : i64, layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e4 : f64, sliding_window = 8 : i64} : (tensor<64xf32>, tensor<1xi32>, tensor<64x64xf32>, tensor<16xbf16>, tensor<64x64xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<64xf32>
  %l = gemma3n.lm_head %a, %table : (tensor<64xf32>, tensor<512x64xf32>) -> tensor<512xf32>
  %c = gemma3n.softcap %l {cap = 3.0e1 : f32} : (tensor<512xf32>) -> tensor<512xf32>
  return %c, %kc, %vc : tensor<512xf32>, tensor<32x32xf32>, tensor<32x32xf32>
}
}
