func.func @cross_entropy_loss_not_scalar(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>) -> tensor<1xf32> {
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
