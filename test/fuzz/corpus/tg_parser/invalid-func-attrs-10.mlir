func.func @unknown_result_attr(%x: tensor<f32>) -> (tensor<f32> {tg.outputs = "loss"}) {
  return %x : tensor<f32>
}
