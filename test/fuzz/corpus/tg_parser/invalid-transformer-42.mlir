func.func @attention_missing_scale(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %0 = tg.attention %q, %q, %q : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
