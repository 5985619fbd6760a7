func.func @input_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.input = "tokens"}) {
  return %x : tensor<f32>
}
