func.func @init_case(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<Zeros>}) {
  return
}
