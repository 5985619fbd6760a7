func.func @unary_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "tg.exp"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}
