// #tg.state and the tg.state / tg.updates attributes.

func.func @state_empty_name(%m: tensor<4xf32> {tg.state = #tg.state<adam_m, "">}) {
  return
}
