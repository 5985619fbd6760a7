func.func @layer_norm_grad_result_types(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  %0:3 = tg.layer_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32>
  return %0#0 : tensor<2x16xf32>
}
