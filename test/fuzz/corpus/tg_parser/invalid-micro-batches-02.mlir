func.func @scalar_sliced(%x: tensor<f32>) -> tensor<f32> {
  %r = tg.micro_batches 1 sliced(%x : tensor<f32>) {
  ^bb0(%xs: tensor<f32>):
    tg.yield %xs : tensor<f32>
  } -> tensor<f32>
  return %r : tensor<f32>
}
