func.func @slice_negative_offset(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  %0 = tg.slice %x [[-1, 0]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
