func.func @rms_norm_weight_element_type(%x: tensor<2x16xbf16>, %w: tensor<16xf32>) -> tensor<2x16xbf16> {
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<2x16xbf16>, tensor<16xf32> -> tensor<2x16xbf16>
  return %0 : tensor<2x16xbf16>
}
