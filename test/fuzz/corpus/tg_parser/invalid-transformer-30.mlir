func.func @softmax_type(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %0 = "tg.softmax"(%x) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
