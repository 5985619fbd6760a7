func.func @broadcast_element_type(%x: tensor<4xf32>) -> tensor<2x4xf16> {
  %0 = tg.broadcast %x : tensor<4xf32> -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}
