func.func @cross_entropy_grad_targets(%l: tensor<2x8x32xf32>, %t: tensor<8x2xi64>, %g: tensor<f32>) -> tensor<2x8x32xf32> {
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<2x8x32xf32>, tensor<8x2xi64>, tensor<f32>
  return %0 : tensor<2x8x32xf32>
}
