func.func @weight_name() {
  %w = gemma3n.weight "" : tensor<4xbf16>
  return
}
