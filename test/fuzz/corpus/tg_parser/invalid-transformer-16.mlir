func.func @layer_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  %0 = tg.layer_norm %x, %w, %w {epsilon = 1.0e-5 : f64} : tensor<f32>, tensor<1xf32>, tensor<1xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
