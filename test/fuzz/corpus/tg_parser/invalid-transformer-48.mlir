func.func @rope_odd_head_dim(%x: tensor<2x4x8x15xf32>) -> tensor<2x4x8x15xf32> {
  %0 = tg.rope %x {theta = 10000.0 : f64, inverse} : tensor<2x4x8x15xf32>
  return %0 : tensor<2x4x8x15xf32>
}
