func.func @attention_key_element_type(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xbf16> {
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  return %0 : tensor<2x4x8x16xbf16>
}
