func.func @add_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "tg.add"(%a, %a) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
