func.func @slice_result_shape(%x: tensor<4x6xf32>) -> tensor<2x2xf32> {
  %0 = tg.slice %x [[0, 0]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
