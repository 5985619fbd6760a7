func.func @embedding_grad_dim(%i: tensor<4xi64>, %g: tensor<4x8xf32>) -> tensor<100x16xf32> {
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x8xf32> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}
