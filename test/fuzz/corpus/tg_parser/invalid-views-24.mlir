func.func @concat_axis_too_large(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = tg.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
