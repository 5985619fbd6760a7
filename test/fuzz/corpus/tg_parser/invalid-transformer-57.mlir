func.func @cross_entropy_loss_type(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>) -> tensor<f16> {
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f16>
  return %0 : tensor<f16>
}
