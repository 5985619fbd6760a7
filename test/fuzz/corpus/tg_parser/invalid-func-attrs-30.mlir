func.func @duplicate_output(%x: tensor<f32>) -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "loss"}) {
  return %x, %x : tensor<f32>, tensor<f32>
}
