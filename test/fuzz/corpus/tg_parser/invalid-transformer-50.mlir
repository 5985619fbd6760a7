func.func @rope_negative_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %0 = tg.rope %x {theta = -1.0 : f64, inverse} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
