func.func @not_divisible(%x: tensor<5x2xf32>) -> tensor<2x2xf32> {
  %r = tg.micro_batches 2 sliced(%x : tensor<5x2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    tg.yield %xs : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}
