// A scalar logits tensor used to crash the verifier.
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %t: tensor<i64>) -> tensor<f32> {
  %0 = tg.cross_entropy %l, %t : tensor<f32>, tensor<i64> -> tensor<f32>
  return %0 : tensor<f32>
}
