func.func @softmax_grad_type(%y: tensor<2x4xf32>, %g: tensor<2x4xbf16>) -> tensor<2x4xf32> {
  %0 = "tg.softmax_grad"(%y, %g) : (tensor<2x4xf32>, tensor<2x4xbf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
