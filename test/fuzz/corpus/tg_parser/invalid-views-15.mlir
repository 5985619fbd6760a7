func.func @slice_negative_size(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  %0 = "tg.slice"(%x) <{offsets = array<i64: 0, 0>, sizes = array<i64: 2, -3>}> : (tensor<4x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
