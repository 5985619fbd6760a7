// SameOperandsAndResultType: tg.cos keeps its input's type.
func.func @cos_type(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  %0 = "tg.cos"(%x) : (tensor<1x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
