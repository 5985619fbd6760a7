func.func @embedding_float_indices(%t: tensor<100x16xf32>, %i: tensor<4xf32>) -> tensor<4x16xf32> {
  %0 = "tg.embedding"(%t, %i) : (tensor<100x16xf32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
