// Errors of the tg argument and result attributes and of the #tg.init and
// #tg.state attributes (TgDialect.cpp).

func.func @param_empty(%w: tensor<4xf32> {tg.param = ""}) {
  return
}
