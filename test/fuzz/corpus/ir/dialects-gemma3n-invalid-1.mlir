func.func @bad_eps(%x: tensor<8xf32>) {
  %y = gemma3n.rms_norm %x {eps = 0.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return
}
