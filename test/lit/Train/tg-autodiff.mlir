// RUN: tg-opt %s --split-input-file --tg-autodiff --verify-diagnostics --mlir-use-nameloc-as-prefix | FileCheck %s

// A linear layer with a bias: the bias gradient sums the broadcast dim away,
// the weight gradient is lhs^T @ dY, and nothing is built for the data input.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<8x3xf32> {tg.output = "grad:w"}, tensor<3xf32> {tg.output = "grad:b"})
// CHECK: %grad_loss = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %grad_t = tg.broadcast {{.*}} -> tensor<4x3xf32>
// CHECK: %[[Y2:.*]] = tg.mul %t, %t
// CHECK: %[[ONE_MINUS:.*]] = tg.sub {{.*}}, %[[Y2]]
// CHECK: %grad_z = tg.mul %grad_t, %[[ONE_MINUS]]
// CHECK: %[[DB:.*]] = tg.reduce_sum %grad_z [0] {keep_dims = true} : tensor<4x3xf32> -> tensor<1x3xf32>
// CHECK: %grad_b = tg.reshape %[[DB]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK-NOT: transpose_rhs
// CHECK: %grad_w = tg.matmul %x, %grad_z {transpose_lhs = true} : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK: return %loss, %grad_w, %grad_b
func.func @forward(%x: tensor<4x8xf32> {tg.input = "tokens"} loc("x"),
                   %w: tensor<8x3xf32> {tg.param = "w"} loc("w"),
                   %b: tensor<3xf32> {tg.param = "b"} loc("b")) -> tensor<f32> {
  %0 = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32> loc("y")
  %1 = tg.add %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32> loc("z")
  %2 = tg.tanh %1 : tensor<4x3xf32> loc("t")
  %3 = tg.reduce_mean %2 [0, 1] : tensor<4x3xf32> -> tensor<f32> loc("loss")
  return %3 : tensor<f32>
}

// -----

// A value used twice gets its gradients added.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: %[[A:.*]] = tg.mul %{{[0-9]+}}, %p
// CHECK: %[[B:.*]] = tg.mul %{{[0-9]+}}, %p
// CHECK: %[[SUM:.*]] = tg.add %[[A]], %[[B]]
// CHECK: return %{{.*}}, %[[SUM]]
func.func @forward(%p: tensor<3xf32> {tg.param = "p"} loc("p")) -> tensor<f32> {
  %0 = tg.mul %p, %p : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = tg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Ops without a VJP are rejected, naming the op.
func.func @forward(%p: tensor<3xf32> {tg.param = "p"}) -> tensor<f32> {
  // expected-error @below {{'tg.reduce_max' op is not differentiable, but the loss depends on it through a parameter}}
  %0 = tg.reduce_max %p [0] : tensor<3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Collectives have no VJP: data parallelism inserts them after autodiff.
func.func @forward(%p: tensor<3xf32> {tg.param = "p"}) -> tensor<f32> {
  // expected-error @below {{'tg.all_reduce' op is not differentiable, but the loss depends on it through a parameter}}
  %0 = tg.all_reduce avg %p over "data" : tensor<3xf32>
  %1 = tg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Slices tiling a value along one axis (a fused projection's query, key and
// value): their gradients are concatenated, not each padded with zeros to
// the whole value and added.
// CHECK-LABEL: func.func @forward_grad(
// CHECK-NOT: tg.pad
// CHECK: %grad_qkv = tg.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NOT: tg.pad
// CHECK: return
func.func @forward(%x: tensor<2x12xf32> {tg.param = "x"} loc("qkv")) -> tensor<f32> {
  %q = tg.slice %x [[0, 0]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("q")
  %k = tg.slice %x [[0, 4]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("k")
  %v = tg.slice %x [[0, 8]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("v")
  %qk = tg.mul %q, %k : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("qk")
  %t = tg.mul %qk, %v : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("t")
  %l = tg.reduce_sum %t [0, 1] : tensor<2x4xf32> -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}

// -----

// The sliced value is a bias add's result: the add's input has the same
// gradient, and both share one concatenation (not one each).
// CHECK-LABEL: func.func @forward_grad(
// CHECK-COUNT-1: tg.concat
// CHECK-NOT: tg.concat
// CHECK: return
func.func @forward(%x: tensor<2x12xf32> {tg.param = "x"} loc("qkv"), %b: tensor<12xf32> {tg.param = "b"} loc("b")) -> tensor<f32> {
  %y = tg.add %x, %b : tensor<2x12xf32>, tensor<12xf32> -> tensor<2x12xf32> loc("qkv_b")
  %q = tg.slice %y [[0, 0]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("q")
  %k = tg.slice %y [[0, 4]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("k")
  %v = tg.slice %y [[0, 8]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("v")
  %qk = tg.mul %q, %k : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("qk")
  %t = tg.mul %qk, %v : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("t")
  %l = tg.reduce_sum %t [0, 1] : tensor<2x4xf32> -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}

// -----

// Slices that leave a gap keep their pads and adds.
// CHECK-LABEL: func.func @forward_grad(
// CHECK: tg.pad
// CHECK: tg.pad
// CHECK-NOT: tg.concat
// CHECK: return
func.func @forward(%x: tensor<2x12xf32> {tg.param = "x"} loc("qkv")) -> tensor<f32> {
  %q = tg.slice %x [[0, 0]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("q")
  %v = tg.slice %x [[0, 8]] [[2, 4]] : tensor<2x12xf32> -> tensor<2x4xf32> loc("v")
  %t = tg.mul %q, %v : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("t")
  %l = tg.reduce_sum %t [0, 1] : tensor<2x4xf32> -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}

// -----

// The loss is the first result: a function returning nothing is refused
// (it crashed the pass before).
// expected-error @below {{@forward must return its loss first, as a float tensor (tensor<f32>); it returns nothing}}
func.func @forward() {
  return
}

// -----

// expected-error @below {{@forward must return its loss first, as a float tensor (tensor<f32>); its first result is 'tensor<i32>'}}
func.func @forward(%x: tensor<i32>) -> tensor<i32> {
  return %x : tensor<i32>
}

// -----

// expected-error @below {{@forward has no body to differentiate}}
func.func private @forward(tensor<4xf32>) -> tensor<f32>
