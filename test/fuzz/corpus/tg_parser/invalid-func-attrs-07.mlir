func.func @output_not_string(%x: tensor<f32>) -> (tensor<f32>, tensor<f32> {tg.output = ["loss"]}) {
  return %x, %x : tensor<f32>, tensor<f32>
}
