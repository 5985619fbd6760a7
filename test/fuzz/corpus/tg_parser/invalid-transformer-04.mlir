func.func @embedding_grad_shape(%i: tensor<2x4xi64>, %g: tensor<8x16xf32>) -> tensor<100x16xf32> {
  %0 = tg.embedding_grad %i, %g : tensor<2x4xi64>, tensor<8x16xf32> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}
