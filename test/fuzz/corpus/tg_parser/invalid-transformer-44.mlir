func.func @attention_grad_query(%q: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %0:3 = tg.attention_grad %q, %q, %q, %q {scale = 0.25 : f64} : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>
  return %0#0 : tensor<4x8x16xf32>
}
