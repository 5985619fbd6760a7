func.func @constant_bool() -> tensor<2xi1> {
  %0 = tg.constant dense<true> : tensor<2xi1>
  return %0 : tensor<2xi1>
}
