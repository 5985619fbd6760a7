func.func @constant_type_mismatch() -> tensor<2xf32> {
  %0 = "tg.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
