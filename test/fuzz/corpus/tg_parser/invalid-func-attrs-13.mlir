func.func @init_unknown_kind(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform>}) {
  return
}
