// SameOperandsAndResultType: tg.silu keeps its input's type.
func.func @silu_type(%x: tensor<2x4xf32>) -> tensor<2x4xf16> {
  %0 = "tg.silu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}
