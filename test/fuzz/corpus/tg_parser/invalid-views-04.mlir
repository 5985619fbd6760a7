func.func @transpose_out_of_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = tg.transpose %x [-1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
