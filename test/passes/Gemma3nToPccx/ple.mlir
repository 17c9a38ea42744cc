// RUN: pccx-opt %s --convert-gemma3n-to-pccx=prefill-rows=3 | FileCheck %s

module attributes {gemma3n.kv_sharing = #gemma3n.kv_sharing_resolved, gemma3n.config = #gemma3n.config<{activation_sparsity_pattern = [0.94999999999999996, 9.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], altup_active_idx = 0 : i64, altup_coef_clip = 1.200000e+02 : f64, altup_correct_scale = true, altup_num_inputs = 4 : i64, architectures = ["Gemma3nForCausalLM"], attention_bias = false, bos_token_id = 2 : i64, eos_token_id = 1 : i64, final_logit_softcapping = 3.000000e+01 : f64, head_dim = 16 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 64 : i64, hidden_size_per_layer_input = 16 : i64, intermediate_size = [128, 128, 96, 128, 96, 128, 96], laurel_rank = 8 : i64, layer_types = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], max_position_embeddings = 256 : i64, model_type = "gemma3n_text", num_attention_heads = 4 : i64, num_hidden_layers = 7 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 2 : i64, pad_token_id = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_parameters = {full_attention = {rope_theta = 1.000000e+06 : f64, rope_type = "default"}, sliding_attention = {rope_theta = 1.000000e+04 : f64, rope_type = "default"}}, rope_theta = 1.000000e+06 : f64, sliding_window = 8 : i64, tie_word_embeddings = true, vocab_size = 512 : i64, vocab_size_per_layer_input = 384 : i64}>} {
// Every matrix of AltUp init and of the per-layer-input injection on the
// NPU: x0 goes to L2 once for the per-layer-input projection and the three
// AltUp projections (GEMVs, any weight format); the host keeps the
// magnitude matching, the product with the layer's per-layer input and
// the post-norm.
func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>) -> tensor<64xf32> attributes {gemma3n.kind = "decode"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %plt_w = gemma3n.weight "model.embed_tokens_per_layer.weight" : tensor<384x32xbf16>
  %plt = gemma3n.quantize %plt_w {scheme = "int4_per_row"} : (tensor<384x32xbf16>) -> tensor<384x32xf32>
  %plm_w = gemma3n.weight "model.per_layer_model_projection.weight" : tensor<32x64xbf16>
  %plm = gemma3n.quantize %plm_w {scheme = "int4_per_row"} : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %pln_w = gemma3n.weight "model.per_layer_projection_norm.weight" : tensor<16xbf16>
  %p0_w = gemma3n.weight "model.altup_projections.0.weight" : tensor<64x64xbf16>
  %p0 = gemma3n.quantize %p0_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p1_w = gemma3n.weight "model.altup_projections.1.weight" : tensor<64x64xbf16>
  %p1 = gemma3n.quantize %p1_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p2_w = gemma3n.weight "model.altup_projections.2.weight" : tensor<64x64xbf16>
  %p2 = gemma3n.quantize %p2_w {scheme = "int8_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %cs_w = gemma3n.weight "model.layers.1.altup.correct_output_scale" : tensor<64xbf16>
  %gate_w = gemma3n.weight "model.layers.1.per_layer_input_gate.weight" : tensor<16x64xbf16>
  %gate = gemma3n.quantize %gate_w {scheme = "int4_per_row"} : (tensor<16x64xbf16>) -> tensor<16x64xf32>
  %proj_w = gemma3n.weight "model.layers.1.per_layer_projection.weight" : tensor<64x16xbf16>
  %proj = gemma3n.quantize %proj_w {scheme = "int4_per_row"} : (tensor<64x16xbf16>) -> tensor<64x16xf32>
  %post_w = gemma3n.weight "model.layers.1.post_per_layer_input_norm.weight" : tensor<64xbf16>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<1xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  %pli = gemma3n.per_layer_inputs %tok, %x, %plt, %plm, %pln_w {num_layers = 2, eps = 1.0e-6 : f32} : (tensor<1xi32>, tensor<64xf32>, tensor<384x32xf32>, tensor<32x64xf32>, tensor<16xbf16>) -> tensor<2x16xf32>
  %s = gemma3n.altup.init %x, %p0, %p1, %p2 : (tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
  %t = gemma3n.ple_inject %s, %pli scale %cs_w, %gate, %proj, %post_w {layer = 1, active = 0, eps = 1.0e-6 : f32, gemma3n.layer = 1 : i64} : (tensor<4x64xf32>, tensor<2x16xf32>, tensor<64xbf16>, tensor<16x64xf32>, tensor<64x16xf32>, tensor<64xbf16>) -> tensor<4x64xf32>
  %y = gemma3n.altup.stream %t[0] {gemma3n.layer = 1 : i64} : (tensor<4x64xf32>) -> tensor<64xf32>
  return %y : tensor<64xf32>
}
func.func @prefill(%tok: tensor<?xi32>, %pos: tensor<1xi32>) -> tensor<?x64xf32> attributes {gemma3n.kind = "prefill"} {
  %table_w = gemma3n.weight "model.embed_tokens.weight" : tensor<512x64xbf16>
  %table = gemma3n.quantize %table_w {scheme = "int4_per_row"} : (tensor<512x64xbf16>) -> tensor<512x64xf32>
  %plt_w = gemma3n.weight "model.embed_tokens_per_layer.weight" : tensor<384x32xbf16>
  %plt = gemma3n.quantize %plt_w {scheme = "int4_per_row"} : (tensor<384x32xbf16>) -> tensor<384x32xf32>
  %plm_w = gemma3n.weight "model.per_layer_model_projection.weight" : tensor<32x64xbf16>
  %plm = gemma3n.quantize %plm_w {scheme = "int4_per_row"} : (tensor<32x64xbf16>) -> tensor<32x64xf32>
  %pln_w = gemma3n.weight "model.per_layer_projection_norm.weight" : tensor<16xbf16>
  %p0_w = gemma3n.weight "model.altup_projections.0.weight" : tensor<64x64xbf16>
  %p0 = gemma3n.quantize %p0_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p1_w = gemma3n.weight "model.altup_projections.1.weight" : tensor<64x64xbf16>
  %p1 = gemma3n.quantize %p1_w {scheme = "int4_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %p2_w = gemma3n.weight "model.altup_projections.2.weight" : tensor<64x64xbf16>
  %p2 = gemma3n.quantize %p2_w {scheme = "int8_per_row"} : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %cs_w = gemma3n.weight "model.layers.1.altup.correct_output_scale" : tensor<64xbf16>
  %gate_w = gemma3n.weight "model.layers.1.per_layer_input_gate.weight" : tensor<16x64xbf16>
  %gate = gemma3n.quantize %gate_w {scheme = "int4_per_row"} : (tensor<16x64xbf16>) -> tensor<16x64xf32>
  %proj_w = gemma3n.weight "model.layers.1.per_layer_projection.weight" : tensor<64x16xbf16>
  %proj = gemma3n.quantize %proj_w {scheme = "int4_per_row"} : (tensor<64x16xbf16>) -> tensor<64x16xf32>
  %post_w = gemma3n.weight "model.layers.1.post_per_layer_input_norm.weight" : tensor<64xbf16>
  %x = gemma3n.embed %tok, %table {scale = 8.0 : f32} : (tensor<?xi32>, tensor<512x64xf32>) -> tensor<?x64xf32>
  %pli = gemma3n.per_layer_inputs %tok, %x, %plt, %plm, %pln_w {num_layers = 2, eps = 1.0e-6 : f32} : (tensor<?xi32>, tensor<?x64xf32>, tensor<384x32xf32>, tensor<32x64xf32>, tensor<16xbf16>) -> tensor<?x2x16xf32>
  %s = gemma3n.altup.init %x, %p0, %p1, %p2 : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<?x4x64xf32>
  %t = gemma3n.ple_inject %s, %pli scale %cs_w, %gate, %proj, %post_w {layer = 1, active = 0, eps = 1.0e-6 : f32, gemma3n.layer = 1 : i64} : (tensor<?x4x64xf32>, tensor<?x2x16xf32>, tensor<64xbf16>, tensor<16x64xf32>, tensor<64x16xf32>, tensor<64xbf16>) -> tensor<?x4x64xf32>
  %y = gemma3n.altup.stream %t[0] {gemma3n.layer = 1 : i64} : (tensor<?x4x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
}

// Host tensors are vectors only: no projection matrix among them.
// CHECK: pccx.host_tensors = {model.layers.1.altup.correct_output_scale = #pccx.recipe<tensor = "model.layers.1.altup.correct_output_scale">, model.layers.1.post_per_layer_input_norm.weight = #pccx.recipe<tensor = "model.layers.1.post_per_layer_input_norm.weight">, model.per_layer_projection_norm.weight = #pccx.recipe<tensor = "model.per_layer_projection_norm.weight">}, pccx.target = #pccx.target<"v002">}
// CHECK-LABEL: pccx.program @decode
// CHECK-LABEL: pccx.segment @prologue
// CHECK: pccx.host.kernel "embed" {params = {out = #pccx.region<buffer = @[[X:h\.[0-9]+]],
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[X]], dest_addr = @[[XL2:in\.[0-9]+]], fmap_shape = #pccx.shape<8, 1, 8>, from_device
// CHECK-NEXT: pccx.gemv {dest_reg = @{{ple_proj\.[0-9]+}}, {{.*}}src_addr = @[[XL2]], {{.*}}"model.per_layer_model_projection.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.host.kernel "per_layer_inputs" {{.*}}out = #pccx.region<buffer = @[[PLI:h\.[0-9]+]], offset = 0, elems = 16, rows = 2, stride = 2>
// No second copy of x0: the AltUp projections read the same L2 buffer, in
// the format each weight was quantized to (INT8 is format 1).
// CHECK-NEXT: pccx.gemv {{.*}}src_addr = @[[XL2]], w_scale, weight_shape = #pccx.shape<64, 64, 0>, {{.*}}"model.altup_projections.0.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.gemv {{.*}}src_addr = @[[XL2]], w_scale, weight_shape = #pccx.shape<64, 64, 0>, {{.*}}"model.altup_projections.1.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.gemv {{.*}}src_addr = @[[XL2]], w_scale, weight_shape = #pccx.shape<64, 64, 1>, {{.*}}"model.altup_projections.2.weight"
// CHECK-NEXT: pccx.memcpy
// CHECK-NEXT: pccx.host.kernel "altup_init" {params = {out = #pccx.region<buffer = @[[S:h\.[0-9]+]], offset = 0, elems = 64, rows = 4, stride = 8>, projected = [
// CHECK-LABEL: pccx.segment @layer.1
// CHECK-NEXT: pccx.host.kernel "mul_tensor" {params = {in = #pccx.region<buffer = @[[S]], offset = 0, elems = 64, rows = 1, stride = 32>, out = #pccx.region<buffer = @[[A:h\.[0-9]+]],
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[A]], dest_addr = @[[AL2:in\.[0-9]+]], {{.*}}from_device
// CHECK-NEXT: pccx.gemv {dest_reg = @[[G:ple_gate\.[0-9]+]], {{.*}}src_addr = @[[AL2]], {{.*}}"model.layers.1.per_layer_input_gate.weight"
// CHECK-NEXT: pccx.cvo {cvo_func = "gelu", dst_addr = @[[GE:ple_gelu\.[0-9]+]], length = 16 : i64, src_addr = @[[G]]}
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[GH:h\.[0-9]+]], {{.*}}src_addr = @[[GE]], to_device}
// Times row 1 of the token's two per-layer inputs, over the GELU output.
// CHECK-NEXT: pccx.host.kernel "mul" {params = {a = #pccx.region<buffer = @[[GH]], offset = 0, elems = 16, rows = 1, stride = 2>, b = #pccx.region<buffer = @[[PLI]], offset = 2, elems = 16, rows = 1, stride = 4>, out = #pccx.region<buffer = @[[GH]], offset = 0, elems = 16, rows = 1, stride = 2>}}
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[GH]], dest_addr = @[[GL2:in\.[0-9]+]], fmap_shape = #pccx.shape<2, 1, 2>, from_device
// CHECK-NEXT: pccx.gemv {dest_reg = @[[PR:ple_proj\.[0-9]+]], fmap_shape = #pccx.shape<1, 2, 8>, {{.*}}src_addr = @[[GL2]], w_scale, weight_shape = #pccx.shape<64, 16, 0>, weights = #pccx.weights<recipe = <quantize = <tensor = "model.layers.1.per_layer_projection.weight">
// CHECK-NEXT: pccx.memcpy {aux_addr = @[[PH:h\.[0-9]+]], {{.*}}src_addr = @[[PR]], to_device}
// The host keeps the post-norm and the sum; the projection is no host
// tensor any more.
// CHECK-NEXT: pccx.host.kernel "ple_inject" {params = {eps = {{.*}}, num_inputs = 4 : i64, out = #pccx.region<buffer = @{{h\.[0-9]+}}, offset = 0, elems = 64, rows = 4, stride = 8>, post_norm = "model.layers.1.post_per_layer_input_norm.weight", projected = #pccx.region<buffer = @[[PH]], offset = 0, elems = 64, rows = 1, stride = 8>, streams = #pccx.region<buffer = @[[S]], offset = 0, elems = 64, rows = 4, stride = 8>}}

// Prefill: GEMMs over the 3 rows; row 1 of each token's block of per-layer
// inputs is every second row.
// CHECK-LABEL: pccx.program @prefill
// CHECK: pccx.gemm {{.*}}fmap_shape = #pccx.shape<3, 8, 8>, {{.*}}"model.altup_projections.0.weight"
// CHECK: pccx.host.kernel "altup_init" {{.*}}projected = [#pccx.region<buffer = @{{h\.[0-9]+}}, offset = 0, elems = 64, rows = 3, stride = 8>,
// CHECK-LABEL: pccx.segment @layer.1
// CHECK: pccx.host.kernel "mul" {params = {a = {{.*}}, b = #pccx.region<buffer = @{{h\.[0-9]+}}, offset = 2, elems = 16, rows = 3, stride = 4>,
// CHECK: pccx.gemm {{.*}}fmap_shape = #pccx.shape<3, 2, 8>, {{.*}}"model.layers.1.per_layer_projection.weight"
// CHECK: pccx.host.kernel "ple_inject" {{.*}}projected = #pccx.region<buffer = @{{h\.[0-9]+}}, offset = 0, elems = 64, rows = 3, stride = 8>
