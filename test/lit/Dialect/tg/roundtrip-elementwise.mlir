// Round trip of the elementwise and reduction ops.
// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s -mlir-print-op-generic | tg-opt | FileCheck %s

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:[^ ,:]+]]: tensor<2x3xf32>, %[[B:[^ ,:]+]]: tensor<2x3xf32>)
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: %[[ADD:[^ ,:]+]] = tg.add %[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[SUB:[^ ,:]+]] = tg.sub %[[ADD]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tg.sub %0, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[MUL:[^ ,:]+]] = tg.mul %[[SUB]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = tg.mul %1, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[DIV:[^ ,:]+]] = tg.div %[[MUL]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %3 = tg.div %2, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[MAX:[^ ,:]+]] = tg.max %[[DIV]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = tg.max %3, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[MIN:[^ ,:]+]] = tg.min %[[MAX]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = tg.min %4, %b : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[POW:[^ ,:]+]] = tg.pow %[[MIN]], %[[A]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %6 = tg.pow %5, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: return %[[POW]]
  return %6 : tensor<2x3xf32>
}

// numpy broadcasting: trailing alignment, size-1 dims, scalars.
// CHECK-LABEL: func.func @binary_broadcast
func.func @binary_broadcast(%x: tensor<2x3x4xf32>, %row: tensor<4xf32>, %col: tensor<3x1xf32>, %s: tensor<f32>, %h: tensor<1x4xf16>, %h2: tensor<5x1xf16>, %d: tensor<2x1x4xf64>, %d2: tensor<1x3x1xf64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x4xf16>, tensor<2x3x4xf64>, tensor<f32>) {
  // CHECK: tg.add %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %0 = tg.add %x, %row : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  // CHECK: tg.sub %{{.*}}, %{{.*}} : tensor<3x1xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %1 = tg.sub %col, %x : tensor<3x1xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tg.mul %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  %2 = tg.mul %x, %s : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
  // CHECK: tg.div %{{.*}}, %{{.*}} : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  %3 = tg.div %s, %row : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  // Both operands broadcast: [1, 4] and [5, 1] -> [5, 4].
  // CHECK: tg.max %{{.*}}, %{{.*}} : tensor<1x4xf16>, tensor<5x1xf16> -> tensor<5x4xf16>
  %4 = tg.max %h, %h2 : tensor<1x4xf16>, tensor<5x1xf16> -> tensor<5x4xf16>
  // CHECK: tg.min %{{.*}}, %{{.*}} : tensor<2x1x4xf64>, tensor<1x3x1xf64> -> tensor<2x3x4xf64>
  %5 = tg.min %d, %d2 : tensor<2x1x4xf64>, tensor<1x3x1xf64> -> tensor<2x3x4xf64>
  // CHECK: tg.pow %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
  %6 = tg.pow %s, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<5x4xf16>, tensor<2x3x4xf64>, tensor<f32>
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:[^ ,:]+]]: tensor<2x3xf32>, %[[H:[^ ,:]+]]: tensor<4xbf16>)
func.func @unary(%x: tensor<2x3xf32>, %h: tensor<4xbf16>) -> (tensor<2x3xf32>, tensor<4xbf16>) {
  // CHECK: %[[NEG:[^ ,:]+]] = tg.neg %[[X]] : tensor<2x3xf32>
  %0 = tg.neg %x : tensor<2x3xf32>
  // CHECK: %[[EXP:[^ ,:]+]] = tg.exp %[[NEG]] : tensor<2x3xf32>
  %1 = tg.exp %0 : tensor<2x3xf32>
  // CHECK: %[[LOG:[^ ,:]+]] = tg.log %[[EXP]] : tensor<2x3xf32>
  %2 = tg.log %1 : tensor<2x3xf32>
  // CHECK: %[[TANH:[^ ,:]+]] = tg.tanh %[[LOG]] : tensor<2x3xf32>
  %3 = tg.tanh %2 : tensor<2x3xf32>
  // CHECK: %[[SQRT:[^ ,:]+]] = tg.sqrt %[[TANH]] : tensor<2x3xf32>
  %4 = tg.sqrt %3 : tensor<2x3xf32>
  // CHECK: %[[RSQRT:[^ ,:]+]] = tg.rsqrt %[[SQRT]] : tensor<2x3xf32>
  %5 = tg.rsqrt %4 : tensor<2x3xf32>
  // CHECK: %[[COS:[^ ,:]+]] = tg.cos %[[RSQRT]] : tensor<2x3xf32>
  %6 = tg.cos %5 : tensor<2x3xf32>
  // CHECK: %[[SIN:[^ ,:]+]] = tg.sin %[[COS]] : tensor<2x3xf32>
  %7 = tg.sin %6 : tensor<2x3xf32>
  // CHECK: %[[SILU:[^ ,:]+]] = tg.silu %[[SIN]] : tensor<2x3xf32>
  %8 = tg.silu %7 : tensor<2x3xf32>
  // CHECK: tg.exp %[[H]] : tensor<4xbf16>
  %9 = tg.exp %h : tensor<4xbf16>
  // CHECK: return %[[SILU]]
  return %8, %9 : tensor<2x3xf32>, tensor<4xbf16>
}

// CHECK-LABEL: func.func @gelu_and_grads
// CHECK-SAME: (%[[X:[^ ,:]+]]: tensor<2x3xf32>, %[[G:[^ ,:]+]]: tensor<2x3xf32>)
func.func @gelu_and_grads(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  // CHECK: tg.gelu %[[X]] none : tensor<2x3xf32>
  %0 = tg.gelu %x none : tensor<2x3xf32>
  // CHECK: tg.gelu %[[X]] tanh : tensor<2x3xf32>
  %1 = tg.gelu %x tanh : tensor<2x3xf32>
  // CHECK: tg.gelu_grad %[[X]], %[[G]] none : tensor<2x3xf32>
  %2 = tg.gelu_grad %x, %g none : tensor<2x3xf32>
  // CHECK: tg.gelu_grad %[[X]], %[[G]] tanh : tensor<2x3xf32>
  %3 = tg.gelu_grad %x, %g tanh : tensor<2x3xf32>
  // CHECK: tg.silu_grad %[[X]], %[[G]] : tensor<2x3xf32>
  %4 = tg.silu_grad %x, %g : tensor<2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// keep_dims = false is the default and is not printed.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<1x3x1xf32>, tensor<f32>, tensor<1x1x1xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>) {
  // CHECK: tg.reduce_sum %{{.*}} [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %0 = tg.reduce_sum %x [2] : tensor<2x3x4xf32> -> tensor<2x3xf32>
  // A negative axis, keep_dims.
  // CHECK: tg.reduce_sum %{{.*}} [-1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  %1 = tg.reduce_sum %x [-1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
  // Several axes, in any order; keep_dims = false spelled out.
  // CHECK: tg.reduce_mean %{{.*}} [2, 0] : tensor<2x3x4xf32> -> tensor<3xf32>
  %2 = tg.reduce_mean %x [2, 0] {keep_dims = false} : tensor<2x3x4xf32> -> tensor<3xf32>
  // CHECK: tg.reduce_mean %{{.*}} [0, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %3 = tg.reduce_mean %x [0, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  // All axes: a scalar.
  // CHECK: tg.reduce_max %{{.*}} [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  %4 = tg.reduce_max %x [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  // CHECK: tg.reduce_max %{{.*}} [-3, -2, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  %5 = tg.reduce_max %x [-3, -2, -1] {keep_dims = true} : tensor<2x3x4xf32> -> tensor<1x1x1xf32>
  // No axes: the identity.
  // CHECK: tg.reduce_sum %{{.*}} [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %6 = tg.reduce_sum %x [] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tg.reduce_max %{{.*}} [-2] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %7 = tg.reduce_max %x [-2] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<2x3x1xf32>, tensor<3xf32>, tensor<1x3x1xf32>, tensor<f32>, tensor<1x1x1xf32>, tensor<2x3x4xf32>, tensor<2x4xf32>
}
