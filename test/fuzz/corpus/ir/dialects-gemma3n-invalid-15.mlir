func.func @quantize_vector(%w: tensor<8xbf16>) {
  %q = gemma3n.quantize %w {scheme = "int4_per_row"} : (tensor<8xbf16>) -> tensor<8xf32>
  return
}
