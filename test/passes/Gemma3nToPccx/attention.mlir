// RUN: pccx-opt %s --convert-gemma3n-to-pccx | FileCheck %s --check-prefixes=CHECK,NPU
// RUN: pccx-opt %s --convert-gemma3n-to-pccx=attention=host | FileCheck %s --check-prefixes=CHECK,HOST
// RUN: not pccx-opt %s --convert-gemma3n-to-pccx=attention=cpu 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --attention option: Cannot find option named 'cpu'!

module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
// Attention over a sliding layer's cache and the streamed LM head: the K/V
// projections with their norm and RoPE on the host, the cache writes, Q on
// the NPU. On the NPU (default): Q.K^T over each kv head's key record for
// the group's heads, a mask GEMV (findemax) and the softmax per head, P.V
// over the value record, all in L2 up to the output projection. On the
// host: scores as dynamic weight records of findemax GEMVs whose lengths
// are patched with the window, softmax on the SFU, P.V on the host. Then
// the LM head row by row with its soft-cap.
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

// A sliding layer keeps window + prefill rows - 1 = 23 slots.
// NPU-LABEL: pccx.program @decode attributes {caches = {kv.0.k = [23, 32, "keys", 2, 8], kv.0.v = [23, 32, "values", 2, 8]}
// HOST-LABEL: pccx.program @decode attributes {caches = {kv.0.k = [23, 32], kv.0.v = [23, 32]}
// CHECK-LABEL: pccx.segment @layer.0
// CHECK: pccx.gemv {dest_reg = @[[K:k\.[0-9]+]], {{.*}}"model.layers.0.self_attn.k_proj.weight"
// CHECK: pccx.gemv {dest_reg = @[[V:v\.[0-9]+]], {{.*}}"model.layers.0.self_attn.v_proj.weight"
// CHECK: pccx.host.kernel "kv_norm_rope" {params = {{.*}}k_out = #pccx.region<buffer = @[[KOUT:h\.[0-9]+]], {{.*}}v_out = #pccx.region<buffer = @[[VOUT:h\.[0-9]+]],
// CHECK-NEXT: pccx.host.kernel "cache_write" {params = {cache = "kv.0.k", rows = #pccx.region<buffer = @[[KOUT]],
// CHECK-NEXT: pccx.host.kernel "cache_write" {params = {cache = "kv.0.v", rows = #pccx.region<buffer = @[[VOUT]],
// CHECK: pccx.gemv {dest_reg = @[[Q:q\.[0-9]+]], {{.*}}"model.layers.0.self_attn.q_proj.weight"
// HOST: pccx.host.kernel "attention_scores" {params = {{.*}}k_cache = "kv.0.k", {{.*}}window = 8 : i64}}
// NPU: pccx.host.kernel "query_norm_rope" {params = {{.*}}heads = 4 : i64, out = #pccx.region<buffer = @[[QN:h\.[0-9]+]],
// NPU-NEXT: pccx.memcpy {aux_addr = @[[QN]], dest_addr = @[[QL2:in\.[0-9]+]], {{.*}}from_device
// Two query heads per kv head: one GEMM over the key record of kv head 0
// scores both into rows of 23 slots (3 words apart).
// NPU-NEXT: pccx.gemm {dest_reg = @[[SC:scores\.[0-9]+]], fmap_shape = #pccx.shape<2, 2, 3>, {{.*}}src_addr = @[[QL2]], w_scale, weight_shape = #pccx.shape<23, 16, 1>, weights = #pccx.weights<cache = "kv.0.k">}
// NPU-NEXT: pccx.gemv {accm, dest_reg = @[[SC]], findemax, fmap_shape = #pccx.shape<1, 1, 3>, {{.*}}src_addr = @one.0, w_scale, weight_shape = #pccx.shape<23, 1, 1>, weights = #pccx.weights<cache = "kv.0.k", mask = true>}
// NPU-NEXT: pccx.cvo {cvo_func = "exp", dst_addr = @[[SC]], length = 23 : i64, src_addr = @[[SC]], sub_emax}
// NPU-NEXT: pccx.cvo {cvo_func = "reduce_sum", dst_addr = @sum.1, length = 23 : i64, src_addr = @[[SC]]}
// NPU-NEXT: pccx.cvo {cvo_func = "scale", dst_addr = @[[SC]], length = 23 : i64, recip_scale, src_addr = @[[SC]]}
// NPU-NEXT: pccx.gemv {accm, dest_reg = @[[SC]], dest_reg_offset = 3 : i64, findemax, {{.*}}weights = #pccx.weights<cache = "kv.0.k", mask = true>}
// NPU: pccx.gemm {dest_reg = @[[AO:attn\.[0-9]+]], fmap_shape = #pccx.shape<2, 3, 2>, {{.*}}src_addr = @[[SC]], w_scale, weight_shape = #pccx.shape<16, 23, 1>, weights = #pccx.weights<cache = "kv.0.v">}
// NPU-NEXT: pccx.gemm {dest_reg = @[[SC]], {{.*}}src_addr = @[[QL2]], src_addr_offset = 4 : i64, {{.*}}weights = #pccx.weights<cache = "kv.0.k", part = 1>}
// NPU: pccx.gemm {dest_reg = @[[AO]], dest_reg_offset = 4 : i64, {{.*}}weights = #pccx.weights<cache = "kv.0.v", part = 1>}
// NPU-NEXT: pccx.gemv {{.*}}src_addr = @[[AO]], {{.*}}"model.layers.0.self_attn.o_proj.weight"
// NPU-NOT: attention_scores
// One findemax GEMV over dynamic records and a softmax per head, lengths
// patched to the visible window; each head's row to its place in the
// probabilities.
// HOST-NEXT: pccx.gemv {dest_reg = @[[SC:scores\.[0-9]+]], findemax, {{.*}}shape_patches = [#pccx.patch<field = "a_value", source = "window_len", window = 8, bank = "weight_shape">], {{.*}}src_addr = @one.0, w_scale, weight_shape = #pccx.shape<8, 1, 0>, weights = #pccx.weights<dynamic = true>}
// HOST-NEXT: pccx.cvo {cvo_func = "exp", dst_addr = @[[SC]], length = 8 : i64, patches = [#pccx.patch<field = "length", source = "window_len", window = 8>], src_addr = @[[SC]], sub_emax}
// HOST-NEXT: pccx.cvo {cvo_func = "reduce_sum", dst_addr = @sum.1,
// HOST-NEXT: pccx.cvo {cvo_func = "scale", {{.*}}recip_scale
// HOST-NEXT: pccx.memcpy {aux_addr = @[[P:h\.[0-9]+]], dest_addr = 0 : i64, {{.*}}src_addr = @[[SC]], to_device}
// HOST: pccx.memcpy {aux_addr = @[[P]], aux_addr_offset = 3 : i64, {{.*}}src_addr = @[[SC]], to_device}
// HOST-NEXT: pccx.host.kernel "attention_values" {params = {{.*}}probs = #pccx.region<buffer = @[[P]], offset = 0, elems = 8, rows = 4, stride = 1>, row = 0 : i64, v_cache = "kv.0.v", window = 8 : i64}}
// HOST: pccx.gemv {{.*}}"model.layers.0.self_attn.o_proj.weight"
// The LM head and soft-cap stream one row of logits through a host row.
// CHECK-LABEL: pccx.segment @epilogue
// CHECK-NEXT: pccx.gemv {dest_reg = @[[LG:logits\.[0-9]+]], {{.*}}weight_shape = #pccx.shape<512, 64, 0>
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[ROW:h\.[0-9]+]], {{.*}}src_addr = @[[LG]], to_device}
// CHECK-NEXT: pccx.host.kernel "softcap" {params = {cap = 3.000000e+01 : f64, in = #pccx.region<buffer = @[[ROW]], {{.*}}out = #pccx.region<buffer = @[[ROW]],
// CHECK-NEXT: pccx.host.kernel "emit_logits" {params = {first_row = 0 : i64, in = #pccx.region<buffer = @[[ROW]],
