func.func @slice_size_too_large(%x: tensor<4x6xf32>) -> tensor<5x6xf32> {
  %0 = tg.slice %x [[0, 0]] [[5, 6]] : tensor<4x6xf32> -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}
