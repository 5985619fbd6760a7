func.func @matmul_rhs_vector(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
