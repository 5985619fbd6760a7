// Round trip of tg.micro_batches and tg.yield.

func.func @loss_and_grad(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %loss, %grad = tg.micro_batches 2 sliced(%x : tensor<4x8xf32>) shared(%w : tensor<8xf32>) {
  ^bb0(%xs: tensor<2x8xf32>, %ws: tensor<8xf32>):
    %y = tg.mul %xs, %ws : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    %l = tg.reduce_sum %y [0, 1] : tensor<2x8xf32> -> tensor<f32>
    tg.yield %l, %ws : tensor<f32>, tensor<8xf32>
  } -> tensor<f32>, tensor<8xf32>
  return %loss, %grad : tensor<f32>, tensor<8xf32>
}

// No sliced or no shared operands: the groups are left out.
func.func @only_shared(%w: tensor<f32>) -> tensor<f32> {
  %r = tg.micro_batches 1 shared(%w : tensor<f32>) {
  ^bb0(%ws: tensor<f32>):
    tg.yield %ws : tensor<f32>
  } -> tensor<f32>
  return %r : tensor<f32>
}
func.func @only_sliced(%x: tensor<3xf64>) -> tensor<1xf64> {
  %r = tg.micro_batches 3 sliced(%x : tensor<3xf64>) {
  ^bb0(%xs: tensor<1xf64>):
    tg.yield %xs : tensor<1xf64>
  } -> tensor<1xf64>
  return %r : tensor<1xf64>
}
