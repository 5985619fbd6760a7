func.func @concat_third_input(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<6x3xf32> {
  %0 = tg.concat %a, %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}
