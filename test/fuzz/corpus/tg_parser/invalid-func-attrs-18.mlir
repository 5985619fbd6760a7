// 0x7FF0000000000000 is +inf as an f64 bit pattern.
func.func @init_infinite_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 0x7FF0000000000000>}) {
  return
}
