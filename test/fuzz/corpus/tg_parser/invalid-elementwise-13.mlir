// SameOperandsAndResultType: tg.rsqrt keeps its input's type.
func.func @rsqrt_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  %0 = "tg.rsqrt"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}
