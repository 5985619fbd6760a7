func.func @broadcast_incompatible(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = tg.broadcast %x : tensor<3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
