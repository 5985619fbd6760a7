func.func @input_empty(%t: tensor<4xi64> {tg.input = ""}) {
  return
}
