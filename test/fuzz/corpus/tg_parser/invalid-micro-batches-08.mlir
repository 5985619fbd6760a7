func.func @not_isolated(%x: tensor<4xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %r = tg.micro_batches 2 sliced(%x : tensor<4xf32>) {
  ^bb0(%xs: tensor<2xf32>):
    %y = tg.add %xs, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    tg.yield %y : tensor<2xf32>
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}
