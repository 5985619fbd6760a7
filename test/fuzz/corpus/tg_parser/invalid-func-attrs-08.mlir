// tg.param, tg.init, tg.input and tg.state are argument attributes only.
func.func @param_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.param = "w"}) {
  return %x : tensor<f32>
}
