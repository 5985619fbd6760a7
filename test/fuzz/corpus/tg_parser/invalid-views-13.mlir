// offset + size overflows int64: still out of bounds.
func.func @slice_offset_overflow(%x: tensor<4xf32>) -> tensor<1xf32> {
  %0 = tg.slice %x [[9223372036854775807]] [[1]] : tensor<4xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
