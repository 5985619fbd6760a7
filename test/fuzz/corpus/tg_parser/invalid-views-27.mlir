func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x8xf32> {
  %0 = tg.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
