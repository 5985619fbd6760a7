func.func @transpose_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tg.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
