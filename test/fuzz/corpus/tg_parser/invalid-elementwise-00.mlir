// Verifier and shape-inference errors of the elementwise and reduction ops.

func.func @add_element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  %0 = tg.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
