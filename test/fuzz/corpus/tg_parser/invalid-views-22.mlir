func.func @pad_integer(%x: tensor<2x3xi64>) -> tensor<3x3xi64> {
  %0 = tg.pad %x low [1, 0] high [0, 0] : tensor<2x3xi64> -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}
