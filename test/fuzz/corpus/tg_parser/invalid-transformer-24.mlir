func.func @rms_norm_scalar(%x: tensor<bf16>, %w: tensor<1xbf16>) -> tensor<bf16> {
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<bf16>, tensor<1xbf16> -> tensor<bf16>
  return %0 : tensor<bf16>
}
