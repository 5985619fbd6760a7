func.func @concat_axis_too_negative(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = tg.concat %a, %a {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
