func.func @attention_key_head_dim(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x32xf32>) -> tensor<2x4x8x16xf32> {
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
