func.func @pad_negative(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = tg.pad %x low [0, 0] high [0, -1] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
