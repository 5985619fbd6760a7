func.func @gelu_grad_shape(%x: tensor<4xf32>, %g: tensor<2x4xf32>) -> tensor<4xf32> {
  %0 = "tg.gelu_grad"(%x, %g) <{approximate = 0 : i32}> : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
