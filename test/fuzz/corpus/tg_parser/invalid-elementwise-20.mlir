func.func @silu_grad_type(%x: tensor<4xf32>, %g: tensor<4xf16>) -> tensor<4xf32> {
  %0 = "tg.silu_grad"(%x, %g) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
