// Verifier and shape-inference errors of the constant, cast and view ops.
// Every message names the operand at fault and the shape that was expected.

func.func @reshape_element_count(%x: tensor<2x3xf32>) -> tensor<4xf32> {
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
