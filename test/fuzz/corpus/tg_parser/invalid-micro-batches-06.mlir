func.func @yield_types(%x: tensor<4x2xf32>) -> tensor<2x2xf64> {
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    tg.yield %xs : tensor<2x2xf32>
  } -> tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}
