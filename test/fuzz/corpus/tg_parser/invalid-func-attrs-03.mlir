func.func @input_not_string(%a: tensor<4xi64>, %b: tensor<4xi64>, %t: tensor<4xi64> {tg.input = unit}) {
  return
}
