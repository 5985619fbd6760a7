func.func @rope_nan_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %0 = tg.rope %x {theta = 0x7FF8000000000000 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
