func.func @rms_norm_grad_weight(%x: tensor<2x16xf32>, %w: tensor<15xf32>) -> tensor<2x16xf32> {
  %0:2 = tg.rms_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<15xf32>, tensor<2x16xf32> -> tensor<2x16xf32>, tensor<15xf32>
  return %0#0 : tensor<2x16xf32>
}
