func.func @updates_type(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf64> {tg.updates = #tg.state<param, "w">}) {
  %0 = tg.cast %w : tensor<4xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}
