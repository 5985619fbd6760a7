func.func @updates_unknown_param(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = #tg.state<param, "v">}) {
  return %w : tensor<4xf32>
}
