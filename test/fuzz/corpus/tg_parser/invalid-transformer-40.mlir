func.func @attention_value_element_type(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf16>) -> tensor<2x4x8x16xf32> {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf16> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}
