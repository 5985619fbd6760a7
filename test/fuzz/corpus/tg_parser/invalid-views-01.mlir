func.func @reshape_element_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}
