func.func @decode_step(%tok: tensor<1xi32>, %pos: tensor<1xi32>,
                       %kc: tensor<8x4xf32>, %vc: tensor<8x4xf32>)
    -> (tensor<16xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %emb = gemma3n.weight "model.language_model.embed_tokens.weight" : tensor<16x8xbf16>
  %ple = gemma3n.weight "model.language_model.embed_tokens_per_layer.weight" : tensor<16x4xbf16>
  %plp = gemma3n.weight "model.language_model.per_layer_model_projection.weight" : tensor<4x8xbf16>
  %pln = gemma3n.weight "model.language_model.per_layer_projection_norm.weight" : tensor<4xbf16>
  %ap = gemma3n.weight "model.language_model.altup_projections.0.weight" : tensor<8x8xbf16>
  %au = gemma3n.weight "model.language_model.altup_unembed_projections.0.weight" : tensor<8x8xbf16>
  %g8 = gemma3n.weight "g8" : tensor<8xbf16>
  %rt = gemma3n.weight "router" : tensor<2x8xbf16>
  %pc = gemma3n.weight "prediction_coefs" : tensor<4x2xbf16>
  %cc = gemma3n.weight "correction_coefs" : tensor<2x2xbf16>
  %ll = gemma3n.weight "laurel_left" : tensor<2x8xbf16>
  %lr = gemma3n.weight "laurel_right" : tensor<8x2xbf16>
  %q = gemma3n.weight "q_proj" : tensor<8x8xbf16>
  %k = gemma3n.weight "k_proj" : tensor<4x8xbf16>
  %v = gemma3n.weight "v_proj" : tensor<4x8xbf16>
  %o = gemma3n.weight "o_proj" : tensor<8x8xbf16>
  %g4 = gemma3n.weight "qk_norm" : tensor<4xbf16>
  %wg = gemma3n.weight "gate_proj" : tensor<16x8xbf16>
  %wu = gemma3n.weight "up_proj" : tensor<16x8xbf16>
  %wd = gemma3n.weight "down_proj" : tensor<8x16xbf16>
  %pg = gemma3n.weight "per_layer_input_gate" : tensor<4x8xbf16>
  %pp = gemma3n.weight "per_layer_projection" : tensor<8x4xbf16>

  %x0 = gemma3n.embed %tok, %emb {scale = 2.82842712 : f32} : (tensor<1xi32>, tensor<16x8xbf16>) -> tensor<8xf32>
  %pli = gemma3n.per_layer_inputs %tok, %x0, %ple, %plp, %pln {num_layers = 1, eps = 1.0e-6 : f32} : (tensor<1xi32>, tensor<8xf32>, tensor<16x4xbf16>, tensor<4x8xbf16>, tensor<4xbf16>) -> tensor<1x4xf32>
  %xs = gemma3n.altup.init %x0, %ap : (tensor<8xf32>, tensor<8x8xbf16>) -> tensor<2x8xf32>
  %pred = gemma3n.altup.predict %xs, %g8, %rt, %pc {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<4x2xbf16>) -> tensor<2x8xf32>
  %act = gemma3n.altup.stream %pred[0] : (tensor<2x8xf32>) -> tensor<8xf32>
  %xn = gemma3n.rms_norm %act, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %lau = gemma3n.laurel %xn, %ll, %lr, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<2x8xbf16>, tensor<8x2xbf16>, tensor<8xbf16>) -> tensor<8xf32>
  %kr, %vr = gemma3n.kv_project %xn, %pos, %k, %v, %g4 {num_kv_heads = 1, head_dim = 4, rope_theta = 10000.0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>)
  %kc1 = gemma3n.kv_cache.write %kc, %kr, %pos {layer = 0} : (tensor<8x4xf32>, tensor<4xf32>, tensor<1xi32>) -> tensor<8x4xf32>
  %vc1 = gemma3n.kv_cache.write %vc, %vr, %pos {layer = 0} : (tensor<8x4xf32>, tensor<4xf32>, tensor<1xi32>) -> tensor<8x4xf32>
  %att = gemma3n.attention %xn, %pos, %q, %g4, %o, %kc1, %vc1 {layer = 0, kv_layer = 0, num_heads = 2, num_kv_heads = 1, head_dim = 4, rope_theta = 10000.0, sliding_window = 4, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<4xbf16>, tensor<8x8xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  %attn = gemma3n.rms_norm %att, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %xa = gemma3n.combine %act, %attn, %lau {scale = 0.707106769 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %h = gemma3n.rms_norm %xa, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %ff = gemma3n.ffn %h, %wg, %wu, %wd {sparsity = 0.95} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  %ffn = gemma3n.rms_norm %ff, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %out = gemma3n.combine %xa, %ffn {scale = 1.0 : f32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %cor = gemma3n.altup.correct %pred, %out, %g8, %rt, %cc {active = 0, eps = 1.0e-6 : f32, coef_clip = 120.0 : f32} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<2x2xbf16>) -> tensor<2x8xf32>
  %xs1 = gemma3n.ple_inject %cor, %pli scale %g8, %pg, %pp, %g8 {layer = 0, active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<1x4xf32>, tensor<8xbf16>, tensor<4x8xbf16>, tensor<8x4xbf16>, tensor<8xbf16>) -> tensor<2x8xf32>
  %fin = gemma3n.altup.collapse %xs1, %au : (tensor<2x8xf32>, tensor<8x8xbf16>) -> tensor<8xf32>
  %fn = gemma3n.rms_norm %fin, %g8 {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<8xbf16>) -> tensor<8xf32>
  %lg = gemma3n.lm_head %fn, %emb : (tensor<8xf32>, tensor<16x8xbf16>) -> tensor<16xf32>
  %sc = gemma3n.softcap %lg {cap = 30.0 : f32} : (tensor<16xf32>) -> tensor<16xf32>
  return %sc, %kc1, %vc1 : tensor<16xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

func.func @prefill_norm(%x: tensor<5x8xf32>) -> tensor<5x8xf32> {
  %y = gemma3n.rms_norm %x {eps = 1.0e-6 : f32} : (tensor<5x8xf32>) -> tensor<5x8xf32>
  return %y : tensor<5x8xf32>
}

func.func @weight_transforms() -> (tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>) {
  %w = gemma3n.weight "gate_proj" : tensor<16x8xbf16>
  %g = gemma3n.weight "gain" : tensor<8xbf16>
  %s = gemma3n.scale_weight %w by %g {factor = 1.0 : f32} : (tensor<16x8xbf16>, tensor<8xbf16>) -> tensor<16x8xf32>
  %h = gemma3n.scale_weight %g {factor = 0.5 : f32} : (tensor<8xbf16>) -> tensor<8xf32>
  %q = gemma3n.quantize %s {scheme = "int4_per_row"} : (tensor<16x8xf32>) -> tensor<16x8xf32>
  return %s, %h, %q : tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>
}
