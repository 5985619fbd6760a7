func.func @pad_entry_count(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
  %0 = tg.pad %x low [1] high [0, 0] : tensor<2x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
