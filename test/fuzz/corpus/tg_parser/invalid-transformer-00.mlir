// Verifier and shape-inference errors of the transformer ops.

func.func @embedding_table_rank(%t: tensor<100xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  %0 = tg.embedding %t[%i] : tensor<100xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
