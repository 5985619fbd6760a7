func.func @state_param(%w: tensor<4xf32> {tg.state = #tg.state<param, "w">}) {
  return
}
