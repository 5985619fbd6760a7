func.func @layer_norm_missing_epsilon(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  %0 = tg.layer_norm %x, %w, %w : tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
