func.func @transpose_wrong_length(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  %0 = tg.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
