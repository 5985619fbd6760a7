func.func @rms_norm_grad_result_grad(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %g: tensor<2x16xf16>) -> tensor<2x16xf32> {
  %0:2 = tg.rms_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf16> -> tensor<2x16xf32>, tensor<16xf32>
  return %0#0 : tensor<2x16xf32>
}
