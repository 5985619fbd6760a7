// SameOperandsAndResultType: tg.tanh keeps its input's type.
func.func @tanh_type(%x: tensor<4xbf16>) -> tensor<4xf32> {
  %0 = "tg.tanh"(%x) : (tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
