// RUN: pccx-opt %s --gemma3n-resolve-kv-sharing --split-input-file --verify-diagnostics

// expected-error @+1 {{module has no 'gemma3n.config' #gemma3n.config attribute}}
module {
}

// -----

// Two layers, the second shares the first's cache, but the function has
// no attention op for layer 1.
module attributes {gemma3n.config = #gemma3n.config<{num_hidden_layers = 2 : i64, num_kv_shared_layers = 1 : i64, layer_types = ["full_attention", "full_attention"], intermediate_size = 64 : i64, hidden_size = 64 : i64, num_attention_heads = 2 : i64, num_key_value_heads = 1 : i64, head_dim = 32 : i64, activation_sparsity_pattern = [0.0, 0.0]}>} {
  // expected-error @+1 {{the config makes layer 1 KV-shared with layer 0, but the function has no attention op of layer 1}}
  func.func @decode_step() attributes {gemma3n.kind = "decode"} {
    return
  }
}

// -----

// Layer 1 is shared, but its attention already reads another layer.
module attributes {gemma3n.config = #gemma3n.config<{num_hidden_layers = 3 : i64, num_kv_shared_layers = 1 : i64, layer_types = ["full_attention", "full_attention", "full_attention"], intermediate_size = 64 : i64, hidden_size = 8 : i64, num_attention_heads = 1 : i64, num_key_value_heads = 1 : i64, head_dim = 8 : i64, activation_sparsity_pattern = [0.0, 0.0, 0.0]}>} {
  func.func @decode_step(%x: tensor<8xf32>, %p: tensor<1xi32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> tensor<8xf32> attributes {gemma3n.kind = "decode"} {
    %q = gemma3n.weight "q" : tensor<8x8xbf16>
    %n = gemma3n.weight "n" : tensor<8xbf16>
    %a0 = gemma3n.attention %x, %p, %q, %n, %q, %k, %v {layer = 0, kv_layer = 0, num_heads = 1, num_kv_heads = 1, head_dim = 8, rope_theta = 10000.0, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    %a1 = gemma3n.attention %a0, %p, %q, %n, %q, %k, %v {layer = 1, kv_layer = 1, num_heads = 1, num_kv_heads = 1, head_dim = 8, rope_theta = 10000.0, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    // expected-error @+1 {{'gemma3n.attention' op reads the cache of layer 0, but the config makes it share layer 1}}
    %a2 = gemma3n.attention %a1, %p, %q, %n, %q, %k, %v {layer = 2, kv_layer = 0, num_heads = 1, num_kv_heads = 1, head_dim = 8, rope_theta = 10000.0, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    return %a2 : tensor<8xf32>
  }
}

// -----

// The shared layer's attention does not read a cache it wrote itself.
module attributes {gemma3n.config = #gemma3n.config<{num_hidden_layers = 2 : i64, num_kv_shared_layers = 1 : i64, layer_types = ["full_attention", "full_attention"], intermediate_size = 64 : i64, hidden_size = 8 : i64, num_attention_heads = 1 : i64, num_key_value_heads = 1 : i64, head_dim = 8 : i64, activation_sparsity_pattern = [0.0, 0.0]}>} {
  func.func @decode_step(%x: tensor<8xf32>, %p: tensor<1xi32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> tensor<8xf32> attributes {gemma3n.kind = "decode"} {
    %q = gemma3n.weight "q" : tensor<8x8xbf16>
    %n = gemma3n.weight "n" : tensor<8xbf16>
    %a0 = gemma3n.attention %x, %p, %q, %n, %q, %k, %v {layer = 0, kv_layer = 0, num_heads = 1, num_kv_heads = 1, head_dim = 8, rope_theta = 10000.0, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    // expected-error @+1 {{'gemma3n.attention' op expects its own cache written by layer 1 (kv_cache.write) before it}}
    %a1 = gemma3n.attention %a0, %p, %q, %n, %q, %k, %v {layer = 1, kv_layer = 1, num_heads = 1, num_kv_heads = 1, head_dim = 8, rope_theta = 10000.0, sliding_window = 0, eps = 1.0e-6 : f32} : (tensor<8xf32>, tensor<1xi32>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    return %a1 : tensor<8xf32>
  }
}
