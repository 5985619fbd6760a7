func.func @broadcast_shrinks(%x: tensor<4x1xf32>) -> tensor<3xf32> {
  %0 = tg.broadcast %x : tensor<4x1xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
