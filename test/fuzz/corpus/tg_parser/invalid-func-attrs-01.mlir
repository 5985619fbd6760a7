func.func @param_not_string(%x: tensor<4xf32>, %w: tensor<4xf32> {tg.param = 1 : i64}) {
  return
}
