func.func @attention_grad_key(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %0:3 = tg.attention_grad %q, %k, %k, %q {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  return %0#0 : tensor<2x4x8x16xf32>
}
