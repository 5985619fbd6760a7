func.func @max_no_broadcast(%a: tensor<3xf32>, %b: tensor<2xf32>) -> tensor<3xf32> {
  %0 = tg.max %a, %b : tensor<3xf32>, tensor<2xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
