func.func @init_std_on_ones(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<ones, std = 0.02>}) {
  return
}
