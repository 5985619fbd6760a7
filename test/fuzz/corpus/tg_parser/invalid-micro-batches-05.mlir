func.func @arg_count(%x: tensor<4x2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) shared(%w : tensor<2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    %s = tg.reduce_sum %xs [0] : tensor<2x2xf32> -> tensor<2xf32>
    tg.yield %s : tensor<2xf32>
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}
