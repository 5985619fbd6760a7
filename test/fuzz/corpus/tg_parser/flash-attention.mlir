func.func @flash_attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %g: tensor<2x4x8x16xf32>,
                           %x: tensor<1x1x4x2xf64>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x4x2xf64>) {
  %o, %l = tg.flash_attention %q, %k, %k {scale = 0.25 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  %dq, %dk, %dv = tg.flash_attention_grad %q, %k, %k, %o, %l, %g {scale = 0.25 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %r, %rl = tg.flash_attention %x, %x, %x {causal = false, scale = 0.5 : f64} : tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64> -> tensor<1x1x4x2xf64>, tensor<1x1x4xf64>
  return %dq, %dv, %r : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x4x2xf64>
}
