func.func @reduce_axis_too_negative(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = tg.reduce_mean %x [-3] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
