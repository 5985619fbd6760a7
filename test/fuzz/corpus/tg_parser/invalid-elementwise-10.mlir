// SameOperandsAndResultType: tg.log keeps its input's type.
func.func @log_type(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %0 = "tg.log"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
