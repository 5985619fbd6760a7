func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  %0 = tg.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
