func.func @init_negative_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = -0.02>}) {
  return
}
