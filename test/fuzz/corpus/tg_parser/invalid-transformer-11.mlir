func.func @matmul_batch(%a: tensor<2x3x4x8xf32>, %b: tensor<2x5x8x6xf32>) -> tensor<2x3x4x6xf32> {
  %0 = tg.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<2x5x8x6xf32> -> tensor<2x3x4x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}
