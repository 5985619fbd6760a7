func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = tg.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}
