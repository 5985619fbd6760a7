func.func @reduce_drop_dims_shape(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %0 = tg.reduce_sum %x [-2] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
