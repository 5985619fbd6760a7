// keep_dims keeps the reduced dim with size 1.
func.func @reduce_keep_dims_shape(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = tg.reduce_mean %x [1] {keep_dims = true} : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
