func.func @duplicate_state(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">}, %m2: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">}) {
  return
}
