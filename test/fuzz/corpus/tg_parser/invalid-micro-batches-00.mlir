// Errors of tg.micro_batches (TgMicroBatches.cpp and ODS).

func.func @count_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = tg.micro_batches 0 sliced(%x : tensor<4xf32>) {
  ^bb0(%xs: tensor<4xf32>):
    tg.yield %xs : tensor<4xf32>
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
