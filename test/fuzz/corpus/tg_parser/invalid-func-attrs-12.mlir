func.func @init_not_init_attr(%w: tensor<4xf32> {tg.param = "w", tg.init = 0.02 : f64}) {
  return
}
