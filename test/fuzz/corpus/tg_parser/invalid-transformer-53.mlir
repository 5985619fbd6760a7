func.func @rope_type(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf16> {
  %0 = "tg.rope"(%x) <{theta = 10000.0 : f64}> : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf16>
  return %0 : tensor<2x4x8x16xf16>
}
