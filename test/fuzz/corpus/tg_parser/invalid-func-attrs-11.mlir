// #tg.init: the rule (zeros, ones, normal with a finite std > 0).

func.func @init_string(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:0.02"}) {
  return
}
