// tg.output is a result attribute only.
func.func @output_on_argument(%w: tensor<4xf32> {tg.output = "loss"}) {
  return
}
