func.func @duplicate_updates(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">}, tensor<4xf32> {tg.updates = #tg.state<param, "w">}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}
