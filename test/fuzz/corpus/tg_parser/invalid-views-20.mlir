func.func @pad_negative_low(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %0 = tg.pad %x low [-1, 0] high [0, 0] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
