// RUN: pccx-opt %s --split-input-file --verify-diagnostics

func.func @bad_gain(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<4xbf16>
  // expected-error @+1 {{gain has shape [4], expected [8]}}
  %y = gemma3n.rms_norm %x, %g {eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<4xbf16>) -> tensor<8xf32>
  return
}

// -----

func.func @bad_eps(%x: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %y = gemma3n.rms_norm %x {eps = 0.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @bad_heads(%x: tensor<8xf32>, %p: tensor<1xi32>, %c: tensor<8x4xf32>) {
  %q = gemma3n.weight "q" : tensor<12x8xbf16>
  %n = gemma3n.weight "n" : tensor<4xbf16>
  %o = gemma3n.weight "o" : tensor<8x12xbf16>
  // expected-error @+1 {{num_heads 3 must be a positive multiple of num_kv_heads 2}}
  %a = gemma3n.attention %x, %p, %q, %n, %o, %c, %c {layer = 0, kv_layer = 0, num_heads = 3, num_kv_heads = 2, head_dim = 4, rope_theta = 1.0e4, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<12x8xbf16>, tensor<4xbf16>, tensor<8x12xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @later_cache(%x: tensor<8xf32>, %p: tensor<1xi32>, %c: tensor<8x4xf32>) {
  %q = gemma3n.weight "q" : tensor<8x8xbf16>
  %n = gemma3n.weight "n" : tensor<4xbf16>
  %o = gemma3n.weight "o" : tensor<8x8xbf16>
  // expected-error @+1 {{layer 2 cannot read the cache of later layer 3}}
  %a = gemma3n.attention %x, %p, %q, %n, %o, %c, %c {layer = 2, kv_layer = 3, num_heads = 2, num_kv_heads = 1, head_dim = 4, rope_theta = 1.0e4, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<4xbf16>, tensor<8x8xbf16>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @ffn_shapes(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<16x8xbf16>
  %u = gemma3n.weight "u" : tensor<16x8xbf16>
  %d = gemma3n.weight "d" : tensor<8x32xbf16>
  // expected-error @+1 {{down has shape [8, 32], expected [8, 16]}}
  %y = gemma3n.ffn %x, %g, %u, %d {sparsity = 0.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x32xbf16>) -> tensor<8xf32>
  return
}

// -----

func.func @ffn_sparsity(%x: tensor<8xf32>) {
  %g = gemma3n.weight "g" : tensor<16x8xbf16>
  %d = gemma3n.weight "d" : tensor<8x16xbf16>
  // expected-error @+1 {{sparsity 1.000000e+00 must be in [0, 1)}}
  %y = gemma3n.ffn %x, %g, %g, %d {sparsity = 1.0} : (tensor<8xf32>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<8xf32>
  return
}

// -----

func.func @collapse(%xs: tensor<4x8xf32>) {
  %p = gemma3n.weight "p" : tensor<8x8xbf16>
  // expected-error @+1 {{needs 3 unembed projections for 4 streams, got 1}}
  %y = gemma3n.altup.collapse %xs, %p : (tensor<4x8xf32>, tensor<8x8xbf16>) -> tensor<8xf32>
  return
}

// -----

func.func @predict_coefs(%xs: tensor<2x8xf32>) {
  %g = gemma3n.weight "g" : tensor<8xbf16>
  %r = gemma3n.weight "r" : tensor<2x8xbf16>
  %c = gemma3n.weight "c" : tensor<2x2xbf16>
  // expected-error @+1 {{coefs has shape [2, 2], expected [4, 2]}}
  %y = gemma3n.altup.predict %xs, %g, %r, %c {active = 0, eps = 1.0e-6 : f32} : (tensor<2x8xf32>, tensor<8xbf16>, tensor<2x8xbf16>, tensor<2x2xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @active(%xs: tensor<2x8xf32>) {
  // expected-error @+1 {{stream 2 is not below 2}}
  %y = gemma3n.altup.stream %xs[2] : (tensor<2x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @tokens(%t: tensor<3xi32>) {
  %e = gemma3n.weight "e" : tensor<16x8xbf16>
  // expected-error @+1 {{has 3 tokens but the activation has 2 positions}}
  %x = gemma3n.embed %t, %e {scale = 1.0 : f32} : (tensor<3xi32>, tensor<16x8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @softcap(%x: tensor<8xf32>) {
  // expected-error @+1 {{cap must be positive}}
  %y = gemma3n.softcap %x {cap = 0.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @cache_write(%c: tensor<8x4xf32>, %r: tensor<6xf32>, %p: tensor<1xi32>) {
  // expected-error @+1 {{rows has shape [6], expected trailing [4]}}
  %y = gemma3n.kv_cache.write %c, %r, %p {layer = 0} : (tensor<8x4xf32>, tensor<6xf32>, tensor<1xi32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @weight_name() {
  // expected-error @+1 {{needs a checkpoint tensor name}}
  %w = gemma3n.weight "" : tensor<4xbf16>
  return
}

// -----

func.func @scale_by_wrong_width(%w: tensor<16x8xbf16>, %g: tensor<4xbf16>) {
  // expected-error @+1 {{'gemma3n.scale_weight' op by has shape [4], expected [8]}}
  %s = gemma3n.scale_weight %w by %g {factor = 1.0 : f32} : (tensor<16x8xbf16>, tensor<4xbf16>) -> tensor<16x8xf32>
  return
}

// -----

func.func @unknown_scheme(%w: tensor<16x8xbf16>) {
  // expected-error @+1 {{'gemma3n.quantize' op unknown scheme 'int3' (known: int4_per_row, int4_per_row_search, int8_per_row)}}
  %q = gemma3n.quantize %w {scheme = "int3"} : (tensor<16x8xbf16>) -> tensor<16x8xf32>
  return
}

// -----

func.func @quantize_vector(%w: tensor<8xbf16>) {
  // expected-error @+1 {{'gemma3n.quantize' op quantizes [rows, columns] weights only}}
  %q = gemma3n.quantize %w {scheme = "int4_per_row"} : (tensor<8xbf16>) -> tensor<8xf32>
  return
}
