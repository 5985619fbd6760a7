func.func @div_element_type(%a: tensor<4xbf16>, %b: tensor<f64>) -> tensor<4xbf16> {
  %0 = tg.div %a, %b : tensor<4xbf16>, tensor<f64> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
