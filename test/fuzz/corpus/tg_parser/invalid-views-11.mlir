func.func @slice_out_of_bounds(%x: tensor<4x6xf32>) -> tensor<2x4xf32> {
  %0 = tg.slice %x [[0, 3]] [[2, 4]] : tensor<4x6xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
