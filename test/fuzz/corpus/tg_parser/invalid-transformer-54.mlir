func.func @cross_entropy_targets(%l: tensor<2x8x32xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<16xi64> -> tensor<f32>
  return %0 : tensor<f32>
}
