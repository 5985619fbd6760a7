func.func @rope_rank(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = tg.rope %x {theta = 10000.0 : f64} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
