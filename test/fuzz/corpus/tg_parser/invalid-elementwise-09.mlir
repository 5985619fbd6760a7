// SameOperandsAndResultType: tg.neg keeps its input's type.
func.func @neg_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "tg.neg"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
