func.func @int_result(%x: tensor<4xi32>) -> tensor<2xi32> {
  %r = tg.micro_batches 2 sliced(%x : tensor<4xi32>) {
  ^bb0(%xs: tensor<2xi32>):
    tg.yield %xs : tensor<2xi32>
  } -> tensor<2xi32>
  return %r : tensor<2xi32>
}
