func.func @gelu_bad_approximation_generic(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "tg.gelu"(%x) <{approximate = 2 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
