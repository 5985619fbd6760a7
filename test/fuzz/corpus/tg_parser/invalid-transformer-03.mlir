func.func @embedding_grad_table_rank(%i: tensor<4xi64>, %g: tensor<4x16xf32>) -> tensor<1600xf32> {
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x16xf32> -> tensor<1600xf32>
  return %0 : tensor<1600xf32>
}
