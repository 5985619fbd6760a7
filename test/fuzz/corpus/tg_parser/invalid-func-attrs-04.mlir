func.func @unknown_arg_attr(%w: tensor<4xf32> {tg.params = "w"}) {
  return
}
