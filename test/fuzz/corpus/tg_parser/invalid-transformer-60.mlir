func.func @cross_entropy_grad_logits_rank(%l: tensor<f32>, %t: tensor<i64>, %g: tensor<f32>) -> tensor<f32> {
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<f32>, tensor<i64>, tensor<f32>
  return %0 : tensor<f32>
}
