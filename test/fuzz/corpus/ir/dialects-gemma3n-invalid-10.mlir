func.func @softcap(%x: tensor<8xf32>) {
  %y = gemma3n.softcap %x {cap = 0.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return
}
