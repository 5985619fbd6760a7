func.func @rms_norm_weight(%x: tensor<2x16xf32>, %w: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
