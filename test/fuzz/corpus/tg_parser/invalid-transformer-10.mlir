func.func @matmul_element_type(%a: tensor<4x8xf32>, %b: tensor<8x5xbf16>) -> tensor<4x5xf32> {
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xbf16> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}
