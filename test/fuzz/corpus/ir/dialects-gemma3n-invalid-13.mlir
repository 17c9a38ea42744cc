func.func @scale_by_wrong_width(%w: tensor<16x8xbf16>, %g: tensor<4xbf16>) {
  %s = gemma3n.scale_weight %w by %g {factor = 1.0 : f32} : (tensor<16x8xbf16>, tensor<4xbf16>) -> tensor<16x8xf32>
  return
}
