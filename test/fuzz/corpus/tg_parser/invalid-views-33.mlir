func.func @cast_shape(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  %0 = tg.cast %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}
