func.func @embedding_result_shape(%t: tensor<100x16xf32>, %i: tensor<2x4xi64>) -> tensor<8x16xf32> {
  %0 = tg.embedding %t[%i] : tensor<100x16xf32>, tensor<2x4xi64> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
