func.func @pow_result_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  %0 = tg.pow %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
