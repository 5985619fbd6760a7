func.func @embedding_grad_element_type(%i: tensor<4xi64>, %g: tensor<4x16xf16>) -> tensor<100x16xf32> {
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x16xf16> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}
