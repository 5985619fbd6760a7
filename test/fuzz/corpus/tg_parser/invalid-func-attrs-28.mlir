func.func @duplicate_input(%a: tensor<4xi32> {tg.input = "tokens"}, %b: tensor<4xi32> {tg.input = "tokens"}) {
  return
}
