// Round trip of the elementwise and reduction ops.

func.func @binary(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tg.sub %0, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = tg.mul %1, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = tg.div %2, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = tg.max %3, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = tg.min %4, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %6 = tg.pow %5, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// numpy broadcasting: trailing alignment, size-1 dims, scalars.
func.func @binary_broadcast(%x: tensor<2x3x4xf32>, %row: tensor<4xf32>, %col: tensor<3x1xf32>, %s: tensor<f32>, %h: tensor<1x4xf16>, %h2: tensor<5x1xf16>, %d: tensor<2x1x4xf64>, %d2: tensor<1x3x1xf64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x4xf16>, tensor<2x3x4xf64>, tensor<f32>) {
  %0 = tg.add %x, %row : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %1 = tg.sub %col, %x : tensor<3x1xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %2 = tg.mul %x, %s : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %3 = tg.div %s, %row : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  // Both operands broadcast: [1, 4] and [5, 1] -> [5, 4].
  %4 = tg.max %h, %h2 : tensor<1x4xf16>, tensor<5x1xf16> -> tensor<5x4xf16>
  %5 = tg.min %d, %d2 : tensor<2x1x4xf64>, tensor<1x3x1xf64> -> tensor<2x3x4xf64>
  %6 = tg.pow %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x4xf16>, tensor<2x3x4xf64>, tensor<f32>
}

func.func @unary(%x: tensor<2x3xf32>, %h: tensor<4xbf16>) -> (tensor<2x3xf32>, tensor<4xbf16>) {
  %0 = tg.neg %x : tensor<2x3xf32>
  %1 = tg.exp %0 : tensor<2x3xf32>
  %2 = tg.log %1 : tensor<2x3xf32>
  %3 = tg.tanh %2 : tensor<2x3xf32>
  %4 = tg.sqrt %3 : tensor<2x3xf32>
  %5 = tg.rsqrt %4 : tensor<2x3xf32>
  %6 = tg.cos %5 : tensor<2x3xf32>
  %7 = tg.sin %6 : tensor<2x3xf32>
  %8 = tg.silu %7 : tensor<2x3xf32>
  %9 = tg.exp %h : tensor<4xbf16>
  return %8, %9 : tensor<2x3xf32>, tensor<4xbf16>
}

func.func @gelu_and_grads(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = tg.gelu %x none : tensor<2x3xf32>
  %1 = tg.gelu %x tanh : tensor<2x3xf32>
  %2 = tg.gelu_grad %x, %g none : tensor<2x3xf32>
  %3 = tg.gelu_grad %x, %g tanh : tensor<2x3xf32>
  %4 = tg.silu_grad %x, %g : tensor<2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// keep_dims = false is the default and is not printed.
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<1x3x1xf32>, tensor<f32>, tensor<1x1x1xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>) {
  %0 = tg.reduce_sum %x [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  // A negative axis, keep_dims.
  %1 = tg.reduce_sum %x [-1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  // Several axes, in any order; keep_dims = false spelled out.
  %2 = tg.reduce_mean %x [2, 0] {keep_dims = false} : tensor<2x3x4xf32> -> tensor<3xf32>
  %3 = tg.reduce_mean %x [0, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  // All axes: a scalar.
  %4 = tg.reduce_max %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  %5 = tg.reduce_max %x [-3, -2, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  // No axes: the identity.
  %6 = tg.reduce_sum %x [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %7 = tg.reduce_max %x [-2] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<1x3x1xf32>, tensor<f32>, tensor<1x1x1xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>
}
