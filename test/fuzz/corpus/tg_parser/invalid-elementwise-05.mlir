func.func @min_element_type(%a: tensor<3xf16>, %b: tensor<3xbf16>) -> tensor<3xf16> {
  %0 = tg.min %a, %b : tensor<3xf16>, tensor<3xbf16> -> tensor<3xf16>
  return %0 : tensor<3xf16>
}
