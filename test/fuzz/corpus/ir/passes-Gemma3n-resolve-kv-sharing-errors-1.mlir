module attributes {gemma3n.config = #gemma3n.config<{num_hidden_layers = 2 : i64, num_kv_shared_layers = 1 : i64, layer_types = ["full_attention", "full_attention"], intermediate_size = 64 : i64, hidden_size = 64 : i64, num_attention_heads = 2 : i64, num_key_value_heads = 1 : i64, head_dim = 32 : i64, activation_sparsity_pattern = [0.0, 0.0]}>} {
  func.func @decode_step() attributes {gemma3n.kind = "decode"} {
    return
  }
}
