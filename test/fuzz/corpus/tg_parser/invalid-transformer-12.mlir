func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) -> tensor<4x5xf32> {
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<7x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
