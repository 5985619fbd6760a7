func.func @cross_entropy_logits_rank(%l: tensor<32xf32>, %t: tensor<i64>) -> tensor<f32> {
  %0 = tg.cross_entropy %l, %t : tensor<32xf32>, tensor<i64> -> tensor<f32>
  return %0 : tensor<f32>
}
