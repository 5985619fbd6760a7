func.func @matmul_result_shape(%a: tensor<2x4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %0 = tg.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
