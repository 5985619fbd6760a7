// SameOperandsAndResultType: tg.sqrt keeps its input's type.
func.func @sqrt_type(%x: tensor<2x3xf64>) -> tensor<3x2xf64> {
  %0 = "tg.sqrt"(%x) : (tensor<2x3xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}
