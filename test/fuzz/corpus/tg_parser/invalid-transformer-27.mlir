func.func @rms_norm_grad_scalar(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  %0:2 = tg.rms_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<f32>, tensor<1xf32>, tensor<f32> -> tensor<f32>, tensor<1xf32>
  return %0#0 : tensor<f32>
}
