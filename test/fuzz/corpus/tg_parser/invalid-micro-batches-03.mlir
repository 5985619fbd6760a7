func.func @slice_type(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) {
  ^bb0(%xs: tensor<4x2xf32>):
    tg.yield %xs : tensor<4x2xf32>
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}
