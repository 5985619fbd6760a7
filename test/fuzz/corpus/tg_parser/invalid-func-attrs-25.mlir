// A param named w exists, but no adam_v state for it.
func.func @updates_unknown_moment(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">})
    -> (tensor<4xf32> {tg.updates = #tg.state<adam_m, "w">}, tensor<4xf32> {tg.updates = #tg.state<adam_v, "w">}) {
  return %m, %m : tensor<4xf32>, tensor<4xf32>
}
