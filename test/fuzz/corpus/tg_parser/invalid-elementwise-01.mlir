func.func @sub_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = tg.sub %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
