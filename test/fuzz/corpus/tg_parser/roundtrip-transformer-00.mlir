// Round trip of the transformer ops: embeddings, matmul, norms, softmax,
// attention (incl. grouped-query heads), rope and the loss.

func.func @embedding(%table: tensor<100x16xf32>, %ids: tensor<2x8xi64>, %ids32: tensor<5xi32>, %s: tensor<i64>) -> (tensor<2x8x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<100x16xf32>, tensor<100x16xf32>) {
  %0 = tg.embedding %table[%ids] : tensor<100x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %1 = tg.embedding %table[%ids32] : tensor<100x16xf32>, tensor<5xi32> -> tensor<5x16xf32>
  // A scalar index picks one row.
  %2 = tg.embedding %table[%s] : tensor<100x16xf32>, tensor<i64> -> tensor<16xf32>
  %3 = tg.embedding_grad %ids, %0 : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<100x16xf32>
  %4 = tg.embedding_grad %ids32, %1 : tensor<5xi32>, tensor<5x16xf32> -> tensor<100x16xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<100x16xf32>, tensor<100x16xf32>
}

// transpose_lhs / transpose_rhs default to false and are then not printed.
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %bt: tensor<5x8xf32>, %at: tensor<8x4xf32>,
                  %x: tensor<2x3x4x8xf32>, %y: tensor<2x3x8x6xf32>, %yt: tensor<2x3x6x8xf32>, %xt: tensor<2x3x8x4xf32>,
                  %h: tensor<2x7x8xbf16>, %w: tensor<8x16xbf16>, %wt: tensor<16x8xbf16>)
    -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>) {
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  %1 = tg.matmul %a, %bt {transpose_rhs = true} : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  %2 = tg.matmul %at, %b {transpose_lhs = true, transpose_rhs = false} : tensor<8x4xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  %3 = tg.matmul %at, %bt {transpose_lhs = true, transpose_rhs = true} : tensor<8x4xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  // Batched, with equal batch dims.
  %4 = tg.matmul %x, %y : tensor<2x3x4x8xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  %5 = tg.matmul %x, %yt {transpose_rhs = true} : tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x4x6xf32>
  %6 = tg.matmul %xt, %y {transpose_lhs = true} : tensor<2x3x8x4xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  // A rank-2 rhs is shared by every batch (a linear layer).
  %7 = tg.matmul %h, %w : tensor<2x7x8xbf16>, tensor<8x16xbf16> -> tensor<2x7x16xbf16>
  %8 = tg.matmul %h, %wt {transpose_rhs = true} : tensor<2x7x8xbf16>, tensor<16x8xbf16> -> tensor<2x7x16xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>
}

func.func @norms(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>, %g: tensor<2x8x16xf32>, %v: tensor<16xf16>, %vw: tensor<16xf16>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf16>) {
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %1:3 = tg.layer_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %2 = tg.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %3:2 = tg.rms_norm_grad %x, %w, %g {epsilon = 1.0e-6 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>
  // A rank-1 input in f16 (the norm runs over its only dim).
  %4 = tg.rms_norm %v, %vw {epsilon = 0.0 : f64} : tensor<16xf16>, tensor<16xf16> -> tensor<16xf16>
  return %0, %1#0, %1#1, %1#2, %3#0, %2, %3#1, %4, %vw : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf16>
}

func.func @softmax(%x: tensor<2x4x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = tg.softmax %x : tensor<2x4x8xf32>
  %1 = tg.softmax_grad %0, %g : tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// causal defaults to true and is then not printed.
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                     %kg: tensor<2x2x8x16xf32>, %vg: tensor<2x2x8x16xf32>,
                     %k1: tensor<2x1x6x16xf32>, %v1: tensor<2x1x6x16xf32>, %g: tensor<2x4x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>) {
  // Multi-head attention.
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  // causal = true spelled out is elided on printing.
  %1 = tg.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  // Grouped-query attention: 4 query heads share 2 key/value heads, not causal.
  %2 = tg.attention %q, %kg, %vg {causal = false, scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // Multi-query attention with a key length (6) that differs from the query length (8).
  %3 = tg.attention %q, %k1, %v1 {causal = false, scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32> -> tensor<2x4x8x16xf32>
  %4:3 = tg.attention_grad %q, %k, %v, %g {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  // The GQA gradient has key/value gradients of the key/value shapes.
  %5:3 = tg.attention_grad %q, %kg, %vg, %g {scale = 0.25 : f64, causal = false} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %6:3 = tg.attention_grad %q, %k1, %v1, %g {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>
  return %0, %1, %2, %3, %4#0, %5#1, %5#2, %4#1, %6#1, %6#2 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>
}

// `inverse` is a unit attribute: absent means the forward rotation.
func.func @rope(%x: tensor<2x4x8x16xf32>, %h: tensor<1x2x3x2xbf16>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x2x3x2xbf16>) {
  %0 = tg.rope %x {theta = 10000.0 : f64} : tensor<2x4x8x16xf32>
  %1 = tg.rope %0 {theta = 10000.0 : f64, inverse} : tensor<2x4x8x16xf32>
  %2 = tg.rope %h {inverse, theta = 500000.0 : f64} : tensor<1x2x3x2xbf16>
  return %0, %1, %2 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x2x3x2xbf16>
}

func.func @cross_entropy(%logits: tensor<2x8x32xf32>, %targets: tensor<2x8xi64>, %l2: tensor<4x10xbf16>, %t2: tensor<4xi32>)
    -> (tensor<f32>, tensor<2x8x32xf32>, tensor<bf16>, tensor<4x10xbf16>) {
  %0 = tg.cross_entropy %logits, %targets : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  %1 = tg.cross_entropy_grad %logits, %targets, %0 : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f32>
  %2 = tg.cross_entropy %l2, %t2 : tensor<4x10xbf16>, tensor<4xi32> -> tensor<bf16>
  %3 = tg.cross_entropy_grad %l2, %t2, %2 : tensor<4x10xbf16>, tensor<4xi32>, tensor<bf16>
  return %0, %1, %2, %3 : tensor<f32>, tensor<2x8x32xf32>, tensor<bf16>, tensor<4x10xbf16>
}
