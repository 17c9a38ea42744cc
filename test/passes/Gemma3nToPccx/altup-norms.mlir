// RUN: pccx-opt %s --convert-gemma3n-to-pccx | FileCheck %s

module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
// AltUp: the stream projections of init and collapse are GEMVs; predict,
// correct, norms and sums are host kernels. The stream stack lives in the
// host window, a stream is a view of it (an offset into the stack's buffer),
// and every host tensor a kernel needs is named, not copied.
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %p0_w = gemma3n.weight "model.altup_projections.0.weight" : tensor<64x64xbf16>
  %p0 = gemma3n.quantize %p0_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p1_w = gemma3n.weight "model.altup_projections.1.weight" : tensor<64x64xbf16>
  %p1 = gemma3n.quantize %p1_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p2_w = gemma3n.weight "model.altup_projections.2.weight" : tensor<64x64xbf16>
  %p2 = gemma3n.quantize %p2_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %rn_w = gemma3n.weight "model.layers.0.altup.router_norm.weight" : tensor<64xbf16>
  %router_w = gemma3n.weight "model.layers.0.altup.modality_router.weight" : tensor<4x64xbf16>
  %pc_w = gemma3n.weight "model.layers.0.altup.prediction_coefs.weight" : tensor<16x4xbf16>
  %cc_w = gemma3n.weight "model.layers.0.altup.correction_coefs.weight" : tensor<4x4xbf16>
  %g_w = gemma3n.weight "model.layers.0.input_layernorm.weight" : tensor<64xbf16>
  %u0_w = gemma3n.weight "model.altup_unembed_projections.0.weight" : tensor<64x64xbf16>
  %u0 = gemma3n.quantize %u0_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %u1_w = gemma3n.weight "model.altup_unembed_projections.1.weight" : tensor<64x64xbf16>
  %u1 = gemma3n.quantize %u1_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %u2_w = gemma3n.weight "model.altup_unembed_projections.2.weight" : tensor<64x64xbf16>
  %u2 = gemma3n.quantize %u2_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  %s = gemma3n.altup.init %x, %p0, %p1, %p2 : (tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %pred = gemma3n.altup.predict %s, %rn_w, %router_w, %pc_w {active = 0 : i64, eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<4x64xf32>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<16x4xbf16>) -> tensor<4x64xf32>
  %act = gemma3n.altup.stream %pred[2] {gemma3n.layer = 0 : i64} : (tensor<4x64xf32>) -> tensor<64xf32>
  %xn = gemma3n.rms_norm %act, %g_w {eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<64xf32>, tensor<64xbf16>) -> tensor<64xf32>
  %sum = gemma3n.combine %act, %xn {gemma3n.layer = 0 : i64, scale = 5.0e-1 : f32} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %cor = gemma3n.altup.correct %pred, %sum, %rn_w, %router_w, %cc_w {active = 0 : i64, coef_clip = 1.2e2 : f32, eps = 1.0e-6 : f32, gemma3n.layer = 0 : i64} : (tensor<4x64xf32>, tensor<64xf32>, tensor<64xbf16>, tensor<4x64xbf16>, tensor<4x4xbf16>) -> tensor<4x64xf32>
  %h = gemma3n.altup.collapse %cor, %u0, %u1, %u2 : (tensor<4x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64xf32>
  %n = gemma3n.rms_norm %h {eps = 1.0e-6 : f32} : (tensor<64xf32>) -> tensor<64xf32>
  return %n : tensor<64xf32>
}
}

// CHECK-LABEL: pccx.segment @prologue
// CHECK: pccx.host.kernel "embed" {params = {out = #pccx.region<buffer = @[[X:h\.[0-9]+]],
// x0 goes to L2 once; each projection's GEMV reads it and its product comes
// back for the magnitude matching.
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[X]], dest_addr = @[[XL2:in\.[0-9]+]], fmap_shape = #pccx.shape<8, 1, 8>, from_device
// CHECK-NEXT: pccx.gemv {dest_reg = @[[P0:altup_proj\.[0-9]+]], fmap_shape = #pccx.shape<1, 8, 8>, {{.*}}src_addr = @[[XL2]], w_scale, weight_shape = #pccx.shape<64, 64, 0>, weights = #pccx.weights<recipe = <quantize = <tensor = "model.altup_projections.0.weight">
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[H0:h\.[0-9]+]], {{.*}}src_addr = @[[P0]], to_device}
// CHECK-NEXT: pccx.gemv {dest_reg = @[[P1:altup_proj\.[0-9]+]], {{.*}}src_addr = @[[XL2]], {{.*}}"model.altup_projections.1.weight"
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[H1:h\.[0-9]+]], {{.*}}src_addr = @[[P1]], to_device}
// CHECK-NEXT: pccx.gemv {dest_reg = @[[P2:altup_proj\.[0-9]+]], {{.*}}src_addr = @[[XL2]], {{.*}}"model.altup_projections.2.weight"
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[H2:h\.[0-9]+]], {{.*}}src_addr = @[[P2]], to_device}
// CHECK-NEXT: pccx.host.kernel "altup_init" {params = {out = #pccx.region<buffer = @[[S:h\.[0-9]+]], offset = 0, elems = 64, rows = 4, stride = 8>, projected = [#pccx.region<buffer = @[[H0]], offset = 0, elems = 64, rows = 1, stride = 8>, #pccx.region<buffer = @[[H1]], {{.*}}>, #pccx.region<buffer = @[[H2]], {{.*}}>], x0 = #pccx.region<buffer = @[[X]],
// CHECK-LABEL: pccx.segment @layer.0
// CHECK-NEXT: pccx.host.kernel "altup_predict" {params = {active = 0 : i64, coefs = "model.layers.0.altup.prediction_coefs.weight", {{.*}}num_inputs = 4 : i64, out = #pccx.region<buffer = @[[P:h\.[0-9]+]], {{.*}}router = "model.layers.0.altup.modality_router.weight", {{.*}}streams = #pccx.region<buffer = @[[S]]
// Stream 2 of the stack: two rows in, every fourth row.
// CHECK-NEXT: pccx.host.kernel "rms_norm" {params = {{.*}}gain = "model.layers.0.input_layernorm.weight", in = #pccx.region<buffer = @[[P]], offset = 16, elems = 64, rows = 1, stride = 32>, out = #pccx.region<buffer = @[[N:h\.[0-9]+]],
// CHECK-NEXT: pccx.host.kernel "combine" {params = {inputs = [#pccx.region<buffer = @[[P]], offset = 16, elems = 64, rows = 1, stride = 32>, #pccx.region<buffer = @[[N]], {{.*}}], out = #pccx.region<buffer = @[[C:h\.[0-9]+]], {{.*}}scale = 5.000000e
// CHECK-NEXT: pccx.host.kernel "altup_correct" {params = {active = 0 : i64, clip = 1.200000e+02 : f64, {{.*}}out = #pccx.region<buffer = @[[K:h\.[0-9]+]], {{.*}}output = #pccx.region<buffer = @[[C]], {{.*}}predictions = #pccx.region<buffer = @[[P]], offset = 0,
// Host work only: no instruction, so no sync is needed anywhere.
// CHECK-NOT: pccx.memcpy
// CHECK-LABEL: pccx.segment @epilogue
// Streams 1, 2, 3 (views one row apart, a stride of four rows) each go to
// L2 for their un-projection.
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[K]], aux_addr_offset = 8 : i64, dest_addr = @[[U0:in\.[0-9]+]], fmap_shape = #pccx.shape<8, 1, 32>, from_device
// CHECK-NEXT: pccx.gemv {dest_reg = @[[Q0:altup_proj\.[0-9]+]], {{.*}}src_addr = @[[U0]], {{.*}}"model.altup_unembed_projections.0.weight"
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[G0:h\.[0-9]+]], {{.*}}src_addr = @[[Q0]], to_device}
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[K]], aux_addr_offset = 16 : i64, dest_addr = @[[U1:in\.[0-9]+]], fmap_shape = #pccx.shape<8, 1, 32>, from_device
// CHECK-NEXT: pccx.gemv {{.*}}src_addr = @[[U1]], {{.*}}"model.altup_unembed_projections.1.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[K]], aux_addr_offset = 24 : i64, dest_addr = @[[U2:in\.[0-9]+]], fmap_shape = #pccx.shape<8, 1, 32>, from_device
// CHECK-NEXT: pccx.gemv {{.*}}src_addr = @[[U2]], {{.*}}"model.altup_unembed_projections.2.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.host.kernel "altup_collapse" {params = {out = #pccx.region<buffer = @[[O:h\.[0-9]+]], {{.*}}projected = [#pccx.region<buffer = @[[G0]], offset = 0, elems = 64, rows = 1, stride = 8>, {{.*}}], streams = #pccx.region<buffer = @[[K]], offset = 0, elems = 64, rows = 4, stride = 8>}}
// A norm without a gain names none.
// CHECK-NEXT: pccx.host.kernel "rms_norm" {params = {eps = 9.9999999747524271E-7 : f64, in = #pccx.region<buffer = @[[O]],
