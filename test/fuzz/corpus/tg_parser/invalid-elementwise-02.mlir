// Dims align at the end: dim 1 of the rank-3 lhs meets dim 0 of the rhs.
func.func @mul_no_broadcast_aligned(%a: tensor<2x3xf32>, %b: tensor<5x4x3xf32>) -> tensor<5x2x3xf32> {
  %0 = tg.mul %b, %a : tensor<5x4x3xf32>, tensor<2x3xf32> -> tensor<5x2x3xf32>
  return %0 : tensor<5x2x3xf32>
}
