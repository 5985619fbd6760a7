// The generic form reaches the ODS type constraints: only ranked tensors.
func.func @unranked(%x: tensor<*xf32>) -> tensor<6xf32> {
  %0 = "tg.reshape"(%x) : (tensor<*xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
