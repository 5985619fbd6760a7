func.func @concat_scalar(%a: tensor<f32>) -> tensor<f32> {
  %0 = tg.concat %a {axis = 0 : i64} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
