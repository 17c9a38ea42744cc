func.func @unknown_scheme(%w: tensor<16x8xbf16>) {
  %q = gemma3n.quantize %w {scheme = "int3"} : (tensor<16x8xbf16>) -> tensor<16x8xf32>
  return
}
