func.func @cross_entropy_grad_loss_grad_type(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>, %g: tensor<f16>) -> tensor<2x8x32xf32> {
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f16>
  return %0 : tensor<2x8x32xf32>
}
