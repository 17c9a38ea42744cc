func.func @active(%xs: tensor<2x8xf32>) {
  %y = gemma3n.altup.stream %xs[2] : (tensor<2x8xf32>) -> tensor<8xf32>
  return
}
