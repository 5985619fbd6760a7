// With transpose_rhs the contraction dim of rhs is its last.
func.func @matmul_contraction_transpose_rhs(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x8xf32> {
  %0 = tg.matmul %a, %b {transpose_rhs = true} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
