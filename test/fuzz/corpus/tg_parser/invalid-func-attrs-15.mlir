func.func @init_missing_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal>}) {
  return
}
