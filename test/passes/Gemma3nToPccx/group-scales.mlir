// RUN: pccx-opt %s --convert-gemma3n-to-pccx | FileCheck %s

module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
// Group scales (docs/quantization.md): a projection whose scheme has groups
// of 32 columns is one GEMV per group, each over its K-slice of the input
// (src_addr_offset in words) with its own record of those columns; every
// one after the first accumulates into the destination (accm).
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_g32_search"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %gate_w = gemma3n.weight "model.layers.0.mlp.gate_proj.weight" : tensor<128x64xbf16>
  %gate = gemma3n.quantize %gate_w {scheme = "int4_g32_search"} : (tensor<128x64xbf16>) -> tensor<128x64xf32>
  %up_w = gemma3n.weight "model.layers.0.mlp.up_proj.weight" : tensor<128x64xbf16>
  %up = gemma3n.quantize %up_w {scheme = "int4_per_row_search"} : (tensor<128x64xbf16>) -> tensor<128x64xf32>
  %down_w = gemma3n.weight "model.layers.0.mlp.down_proj.weight" : tensor<64x128xbf16>
  %down = gemma3n.quantize %down_w {scheme = "int4_g32_search"} : (tensor<64x128xbf16>) -> tensor<64x128xf32>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  %y = gemma3n.ffn %x, %gate, %up, %down {gemma3n.layer = 1 : i64, sparsity = 0.0 : f64} : (tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<64xf32>
  return %y : tensor<64xf32>
}
}

// CHECK-LABEL: pccx.segment @layer.1
// CHECK: pccx.gemv {dest_reg = @[[GATE:gate\.[0-9]+]], fmap_shape = #pccx.shape<1, 8, 16>, {{.*}}src_addr = @[[XL2:in\.[0-9]+]], w_scale, weight_shape = #pccx.shape<128, 32, 0>, weights = #pccx.weights<recipe = <quantize = <tensor = "model.layers.0.mlp.gate_proj.weight">, scheme = "int4_g32_search">, num_rows = 128, num_cols = 32>}
// CHECK-NEXT: pccx.gemv {accm, dest_reg = @[[GATE]], fmap_shape = #pccx.shape<1, 8, 16>, {{.*}}src_addr = @[[XL2]], src_addr_offset = 4 : i64, w_scale, weight_shape = #pccx.shape<128, 32, 0>, weights = #pccx.weights<recipe = <quantize = <tensor = "model.layers.0.mlp.gate_proj.weight">, scheme = "int4_g32_search">, num_rows = 128, first_col = 32, num_cols = 32>}
// A scheme without groups stays one GEMV.
// CHECK-NEXT: pccx.gemv {dest_reg = @{{up\.[0-9]+}}, {{.*}}weight_shape = #pccx.shape<128, 64, 0>, weights = #pccx.weights<recipe = <quantize = <tensor = "model.layers.0.mlp.up_proj.weight">, scheme = "int4_per_row_search">, num_rows = 128>}
// CHECK: pccx.gemv {dest_reg = @[[DOWN:down\.[0-9]+]], fmap_shape = #pccx.shape<1, 16, 8>, {{.*}}weight_shape = #pccx.shape<64, 32, 0>, {{.*}}num_rows = 64, num_cols = 32>}
// CHECK-NEXT: pccx.gemv {accm, dest_reg = @[[DOWN]], {{.*}}src_addr_offset = 4 : i64, {{.*}}first_col = 32, num_cols = 32>}
// CHECK-NEXT: pccx.gemv {accm, dest_reg = @[[DOWN]], {{.*}}src_addr_offset = 8 : i64, {{.*}}first_col = 64, num_cols = 32>}
// CHECK-NEXT: pccx.gemv {accm, dest_reg = @[[DOWN]], {{.*}}src_addr_offset = 12 : i64, {{.*}}first_col = 96, num_cols = 32>}
// CHECK-NOT: accm
// CHECK-LABEL: pccx.segment @epilogue
