// Names are unique per function.

func.func @duplicate_param(%a: tensor<4xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "v"}, %c: tensor<4xf32> {tg.param = "w"}) {
  return
}
