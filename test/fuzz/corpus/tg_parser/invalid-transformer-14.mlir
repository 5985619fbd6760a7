// With transpose_lhs, lhs [K, M] = [4, 8] contracts over 4.
func.func @matmul_contraction_transpose_lhs(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<8x5xf32> {
  %0 = tg.matmul %a, %b {transpose_lhs = true} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}
