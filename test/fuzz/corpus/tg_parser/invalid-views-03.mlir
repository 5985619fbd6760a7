func.func @transpose_repeated_dim(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = tg.transpose %x [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
