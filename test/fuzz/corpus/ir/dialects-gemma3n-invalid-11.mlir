func.func @cache_write(%c: tensor<8x4xf32>, %r: tensor<6xf32>, %p: tensor<1xi32>) {
  %y = gemma3n.kv_cache.write %c, %r, %p {layer = 0} : (tensor<8x4xf32>, tensor<6xf32>, tensor<1xi32>) -> tensor<8x4xf32>
  return
}
