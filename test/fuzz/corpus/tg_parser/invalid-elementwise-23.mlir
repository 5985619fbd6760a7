func.func @reduce_scalar(%x: tensor<f32>) -> tensor<f32> {
  %0 = tg.reduce_max %x [0] : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}
