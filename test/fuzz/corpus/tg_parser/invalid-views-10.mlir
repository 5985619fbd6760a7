func.func @slice_size_count(%x: tensor<4x6xf32>) -> tensor<2xf32> {
  %0 = tg.slice %x [[1, 0]] [[2]] : tensor<4x6xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
