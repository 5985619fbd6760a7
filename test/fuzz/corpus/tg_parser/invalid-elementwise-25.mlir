// -1 and 1 are the same axis of a rank-2 input.
func.func @reduce_axis_twice_negative(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = tg.reduce_sum %x [1, -1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
