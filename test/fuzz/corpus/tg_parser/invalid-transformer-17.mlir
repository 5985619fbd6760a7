func.func @layer_norm_weight(%x: tensor<2x16xf32>, %w: tensor<8xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<8xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
