func.func @init_zero_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 0.0>}) {
  return
}
