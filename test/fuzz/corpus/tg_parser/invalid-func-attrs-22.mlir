func.func @state_string(%m: tensor<4xf32> {tg.state = "adam_m:w"}) {
  return
}
