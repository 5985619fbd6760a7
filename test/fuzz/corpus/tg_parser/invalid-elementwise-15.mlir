// SameOperandsAndResultType: tg.sin keeps its input's type.
func.func @sin_type(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %0 = "tg.sin"(%x) : (tensor<4xf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
