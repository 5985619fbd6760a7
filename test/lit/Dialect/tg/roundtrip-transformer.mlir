// Round trip of the transformer ops: embeddings, matmul, norms, softmax,
// attention (incl. grouped-query heads), rope and the loss.
// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s -mlir-print-op-generic | tg-opt | FileCheck %s

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:[^ ,:]+]]: tensor<100x16xf32>, %[[I:[^ ,:]+]]: tensor<2x8xi64>, %[[J:[^ ,:]+]]: tensor<5xi32>, %{{.*}}: tensor<i64>)
func.func @embedding(%table: tensor<100x16xf32>, %ids: tensor<2x8xi64>, %ids32: tensor<5xi32>, %s: tensor<i64>) -> (tensor<2x8x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<100x16xf32>, tensor<100x16xf32>) {
  // CHECK: %[[E:[^ ,:]+]] = tg.embedding %[[T]][%[[I]]] : tensor<100x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %0 = tg.embedding %table[%ids] : tensor<100x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  // CHECK: tg.embedding %[[T]][%[[J]]] : tensor<100x16xf32>, tensor<5xi32> -> tensor<5x16xf32>
  %1 = tg.embedding %table[%ids32] : tensor<100x16xf32>, tensor<5xi32> -> tensor<5x16xf32>
  // A scalar index picks one row.
  // CHECK: tg.embedding %[[T]][%{{.*}}] : tensor<100x16xf32>, tensor<i64> -> tensor<16xf32>
  %2 = tg.embedding %table[%s] : tensor<100x16xf32>, tensor<i64> -> tensor<16xf32>
  // CHECK: tg.embedding_grad %[[I]], %[[E]] : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<100x16xf32>
  %3 = tg.embedding_grad %ids, %0 : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<100x16xf32>
  // CHECK: tg.embedding_grad %[[J]], %{{.*}} : tensor<5xi32>, tensor<5x16xf32> -> tensor<100x16xf32>
  %4 = tg.embedding_grad %ids32, %1 : tensor<5xi32>, tensor<5x16xf32> -> tensor<100x16xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8x16xf32>, tensor<5x16xf32>, tensor<16xf32>, tensor<100x16xf32>, tensor<100x16xf32>
}

// transpose_lhs / transpose_rhs default to false and are then not printed.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %bt: tensor<5x8xf32>, %at: tensor<8x4xf32>,
                  %x: tensor<2x3x4x8xf32>, %y: tensor<2x3x8x6xf32>, %yt: tensor<2x3x6x8xf32>, %xt: tensor<2x3x8x4xf32>,
                  %h: tensor<2x7x8xbf16>, %w: tensor<8x16xbf16>, %wt: tensor<16x8xbf16>)
    -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>) {
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  %1 = tg.matmul %a, %bt {transpose_rhs = true} : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : tensor<8x4xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  %2 = tg.matmul %at, %b {transpose_lhs = true, transpose_rhs = false} : tensor<8x4xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_lhs = true, transpose_rhs = true} : tensor<8x4xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  %3 = tg.matmul %at, %bt {transpose_lhs = true, transpose_rhs = true} : tensor<8x4xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  // Batched, with equal batch dims.
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x3x4x8xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  %4 = tg.matmul %x, %y : tensor<2x3x4x8xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x4x6xf32>
  %5 = tg.matmul %x, %yt {transpose_rhs = true} : tensor<2x3x4x8xf32>, tensor<2x3x6x8xf32> -> tensor<2x3x4x6xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_lhs = true} : tensor<2x3x8x4xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  %6 = tg.matmul %xt, %y {transpose_lhs = true} : tensor<2x3x8x4xf32>, tensor<2x3x8x6xf32> -> tensor<2x3x4x6xf32>
  // A rank-2 rhs is shared by every batch (a linear layer).
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x7x8xbf16>, tensor<8x16xbf16> -> tensor<2x7x16xbf16>
  %7 = tg.matmul %h, %w : tensor<2x7x8xbf16>, tensor<8x16xbf16> -> tensor<2x7x16xbf16>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs = true} : tensor<2x7x8xbf16>, tensor<16x8xbf16> -> tensor<2x7x16xbf16>
  %8 = tg.matmul %h, %wt {transpose_rhs = true} : tensor<2x7x8xbf16>, tensor<16x8xbf16> -> tensor<2x7x16xbf16>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x3x4x6xf32>, tensor<2x7x16xbf16>, tensor<2x7x16xbf16>
}

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:[^ ,:]+]]: tensor<2x8x16xf32>, %[[W:[^ ,:]+]]: tensor<16xf32>, %[[B:[^ ,:]+]]: tensor<16xf32>, %[[G:[^ ,:]+]]: tensor<2x8x16xf32>, %[[V:[^ ,:]+]]: tensor<16xf16>, %[[VW:[^ ,:]+]]: tensor<16xf16>)
func.func @norms(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>, %g: tensor<2x8x16xf32>, %v: tensor<16xf16>, %vw: tensor<16xf16>)
    -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf16>) {
  // CHECK: tg.layer_norm %[[X]], %[[W]], %[[B]] {epsilon = 1.000000e-05 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tg.layer_norm_grad %[[X]], %[[W]], %[[G]] {epsilon = 1.000000e-05 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %1:3 = tg.layer_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: tg.rms_norm %[[X]], %[[W]] {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %2 = tg.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK: %{{.*}}, %{{.*}} = tg.rms_norm_grad %[[X]], %[[W]], %[[G]] {epsilon = 9.9999999999999995E-7 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>
  %3:2 = tg.rms_norm_grad %x, %w, %g {epsilon = 1.0e-6 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<16xf32>
  // A rank-1 input in f16 (the norm runs over its only dim).
  // CHECK: tg.rms_norm %[[V]], %[[VW]] {epsilon = 0.000000e+00 : f64} : tensor<16xf16>, tensor<16xf16> -> tensor<16xf16>
  %4 = tg.rms_norm %v, %vw {epsilon = 0.0 : f64} : tensor<16xf16>, tensor<16xf16> -> tensor<16xf16>
  return %0, %1#0, %1#1, %1#2, %3#0, %2, %3#1, %4, %vw : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf16>, tensor<16xf16>
}

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^ ,:]+]]: tensor<2x4x8xf32>, %[[G:[^ ,:]+]]: tensor<2x4x8xf32>)
func.func @softmax(%x: tensor<2x4x8xf32>, %g: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // CHECK: %[[S:[^ ,:]+]] = tg.softmax %[[X]] : tensor<2x4x8xf32>
  %0 = tg.softmax %x : tensor<2x4x8xf32>
  // CHECK: tg.softmax_grad %[[S]], %[[G]] : tensor<2x4x8xf32>
  %1 = tg.softmax_grad %0, %g : tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// causal defaults to true and is then not printed.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:[^ ,:]+]]: tensor<2x4x8x16xf32>, %[[K:[^ ,:]+]]: tensor<2x4x8x16xf32>, %[[V:[^ ,:]+]]: tensor<2x4x8x16xf32>, %[[KG:[^ ,:]+]]: tensor<2x2x8x16xf32>, %[[VG:[^ ,:]+]]: tensor<2x2x8x16xf32>, %[[K1:[^ ,:]+]]: tensor<2x1x6x16xf32>, %[[V1:[^ ,:]+]]: tensor<2x1x6x16xf32>, %[[G:[^ ,:]+]]: tensor<2x4x8x16xf32>)
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                     %kg: tensor<2x2x8x16xf32>, %vg: tensor<2x2x8x16xf32>,
                     %k1: tensor<2x1x6x16xf32>, %v1: tensor<2x1x6x16xf32>, %g: tensor<2x4x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>) {
  // Multi-head attention.
  // CHECK: tg.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  // causal = true spelled out is elided on printing.
  // CHECK: tg.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %1 = tg.attention %q, %k, %v {scale = 0.125 : f64, causal = true} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  // Grouped-query attention: 4 query heads share 2 key/value heads, not causal.
  // CHECK: tg.attention %[[Q]], %[[KG]], %[[VG]] {causal = false, scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  %2 = tg.attention %q, %kg, %vg {causal = false, scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
  // Multi-query attention with a key length (6) that differs from the query length (8).
  // CHECK: tg.attention %[[Q]], %[[K1]], %[[V1]] {causal = false, scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32> -> tensor<2x4x8x16xf32>
  %3 = tg.attention %q, %k1, %v1 {causal = false, scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32> -> tensor<2x4x8x16xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tg.attention_grad %[[Q]], %[[K]], %[[V]], %[[G]] {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  %4:3 = tg.attention_grad %q, %k, %v, %g {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  // The GQA gradient has key/value gradients of the key/value shapes.
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tg.attention_grad %[[Q]], %[[KG]], %[[VG]], %[[G]] {causal = false, scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %5:3 = tg.attention_grad %q, %kg, %vg, %g {scale = 0.25 : f64, causal = false} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = tg.attention_grad %[[Q]], %[[K1]], %[[V1]], %[[G]] {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>
  %6:3 = tg.attention_grad %q, %k1, %v1, %g {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>
  return %0, %1, %2, %3, %4#0, %5#1, %5#2, %4#1, %6#1, %6#2 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x6x16xf32>, tensor<2x1x6x16xf32>
}

// `inverse` is a unit attribute: absent means the forward rotation.
// CHECK-LABEL: func.func @rope
// CHECK-SAME: (%[[X:[^ ,:]+]]: tensor<2x4x8x16xf32>, %[[H:[^ ,:]+]]: tensor<1x2x3x2xbf16>)
func.func @rope(%x: tensor<2x4x8x16xf32>, %h: tensor<1x2x3x2xbf16>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x2x3x2xbf16>) {
  // CHECK: %[[R:[^ ,:]+]] = tg.rope %[[X]] {theta = 1.000000e+04 : f64} : tensor<2x4x8x16xf32>
  %0 = tg.rope %x {theta = 10000.0 : f64} : tensor<2x4x8x16xf32>
  // CHECK: tg.rope %[[R]] {inverse, theta = 1.000000e+04 : f64} : tensor<2x4x8x16xf32>
  %1 = tg.rope %0 {theta = 10000.0 : f64, inverse} : tensor<2x4x8x16xf32>
  // CHECK: tg.rope %[[H]] {inverse, theta = 5.000000e+05 : f64} : tensor<1x2x3x2xbf16>
  %2 = tg.rope %h {inverse, theta = 500000.0 : f64} : tensor<1x2x3x2xbf16>
  return %0, %1, %2 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x2x3x2xbf16>
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:[^ ,:]+]]: tensor<2x8x32xf32>, %[[T:[^ ,:]+]]: tensor<2x8xi64>, %[[L2:[^ ,:]+]]: tensor<4x10xbf16>, %[[T2:[^ ,:]+]]: tensor<4xi32>)
func.func @cross_entropy(%logits: tensor<2x8x32xf32>, %targets: tensor<2x8xi64>, %l2: tensor<4x10xbf16>, %t2: tensor<4xi32>)
    -> (tensor<f32>, tensor<2x8x32xf32>, tensor<bf16>, tensor<4x10xbf16>) {
  // CHECK: %[[LOSS:[^ ,:]+]] = tg.cross_entropy %[[L]], %[[T]] : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  %0 = tg.cross_entropy %logits, %targets : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  // CHECK: tg.cross_entropy_grad %[[L]], %[[T]], %[[LOSS]] : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f32>
  %1 = tg.cross_entropy_grad %logits, %targets, %0 : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f32>
  // CHECK: %[[LOSS2:[^ ,:]+]] = tg.cross_entropy %[[L2]], %[[T2]] : tensor<4x10xbf16>, tensor<4xi32> -> tensor<bf16>
  %2 = tg.cross_entropy %l2, %t2 : tensor<4x10xbf16>, tensor<4xi32> -> tensor<bf16>
  // CHECK: tg.cross_entropy_grad %[[L2]], %[[T2]], %[[LOSS2]] : tensor<4x10xbf16>, tensor<4xi32>, tensor<bf16>
  %3 = tg.cross_entropy_grad %l2, %t2, %2 : tensor<4x10xbf16>, tensor<4xi32>, tensor<bf16>
  return %0, %1, %2, %3 : tensor<f32>, tensor<2x8x32xf32>, tensor<bf16>, tensor<4x10xbf16>
}

// Flash attention (made by tg-fuse-attention): the log-sum-exp is [B, Hq, T]
// in f32 (f64 for f64 queries); the gradient reads it and the result.
// CHECK-LABEL: func.func @flash_attention
// CHECK: %[[O:.*]], %[[L:.*]] = tg.flash_attention %arg0, %arg1, %arg1 {scale = 2.500000e-01 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
// CHECK: tg.flash_attention_grad %arg0, %arg1, %arg1, %[[O]], %[[L]], %arg2 {scale = 2.500000e-01 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
// CHECK: tg.flash_attention %arg3, %arg3, %arg3 {causal = false, scale = 5.000000e-01 : f64} : tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64> -> tensor<1x1x4x2xf64>, tensor<1x1x4xf64>
func.func @flash_attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %g: tensor<2x4x8x16xf32>,
                           %x: tensor<1x1x4x2xf64>) -> (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x4x2xf64>) {
  %o, %l = tg.flash_attention %q, %k, %k {scale = 0.25 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  %dq, %dk, %dv = tg.flash_attention_grad %q, %k, %k, %o, %l, %g {scale = 0.25 : f64, window = 3 : i64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  %r, %rl = tg.flash_attention %x, %x, %x {causal = false, scale = 0.5 : f64} : tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64>, tensor<1x1x4x2xf64> -> tensor<1x1x4x2xf64>, tensor<1x1x4xf64>
  return %dq, %dv, %r : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x1x4x2xf64>
}
