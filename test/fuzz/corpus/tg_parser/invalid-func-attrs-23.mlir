func.func @updates_string(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = "param:w"}) {
  return %w : tensor<4xf32>
}
