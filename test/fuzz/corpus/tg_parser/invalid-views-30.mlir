func.func @concat_result_shape(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tg.concat %a, %a {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
