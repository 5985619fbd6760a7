// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-bias | FileCheck %s
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-bias=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// The bias add that only consumes a GEMM's product becomes the GEMM's
// epilogue: the GEMM writes the add's output, the product buffer, the
// dispatch and the kernel (no other dispatch of it) go away.
// CHECK-LABEL: exec.program @fused
// CHECK: %[[X:.*]] = exec.resource input "x"
// CHECK: %[[W:.*]] = exec.resource parameter "w"
// CHECK: %[[B:.*]] = exec.resource parameter "b"
// CHECK: %[[Y:.*]] = exec.resource output "y"
// CHECK-NEXT: exec.gemm(%[[X]], %[[W]]) -> %[[Y]] bias(%[[B]] : memref<8xf32>) {batch = 1 : i64, k = 4 : i64, m = 2 : i64, n = 8 : i64, stride_a = 8 : i64, stride_b = 0 : i64, stride_c = 16 : i64}
// CHECK-NOT: exec.dispatch
// CHECK-NOT: exec.resource scratch
// CHECK-NOT: func.func @k0_add
// REMARK: remark: bias add fused into the GEMM's epilogue: the GEMM writes the sum, and its product is never stored
exec.program @fused attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x4xf32>
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %b = exec.resource parameter "b" : memref<8xf32>
  %p = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %y = exec.resource output "y" : memref<2x8xf32>
  %t1 = exec.dispatch @kernels::@k0_add(%p, %b) -> (%y) : (memref<2x8xf32>, memref<8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k0_add(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// The bias first works too; a product that something else also reads, and
// an add of two full matrices (a residual), stay as they are.
// CHECK-LABEL: exec.program @partly
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[Y1:.*]] bias(
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[P2:.*]] {
// CHECK: exec.dispatch @kernels::@k1_bias_first(%{{.*}}, %[[P2]])
// CHECK: exec.dispatch @kernels::@k2_mul(%[[P2]]
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[P3:.*]] {
// CHECK: exec.dispatch @kernels::@k3_residual(%[[P3]]
// CHECK: func.func @k1_bias_first
// CHECK: func.func @k3_residual
// REMARK: remark: bias add fused into the GEMM's epilogue
// REMARK: remark: bias add not fused into a GEMM's epilogue: the product is not a scratch buffer written by one GEMM and read by the add alone
exec.program @partly attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x4xf32>
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %b = exec.resource parameter "b" : memref<8xf32>
  %p1 = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p1 {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %y1 = exec.resource output "y1" : memref<2x8xf32>
  %t1 = exec.dispatch @kernels::@k1_bias_first(%b, %p1) -> (%y1) : (memref<8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p2 = exec.resource scratch : memref<2x8xf32>
  %t2 = exec.gemm(%x, %w) -> %p2 {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %y2 = exec.resource output "y2" : memref<2x8xf32>
  %t3 = exec.dispatch @kernels::@k1_bias_first(%b, %p2) -> (%y2) : (memref<8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %y3 = exec.resource output "y3" : memref<2x8xf32>
  %t4 = exec.dispatch @kernels::@k2_mul(%p2, %p2) -> (%y3) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p3 = exec.resource scratch : memref<2x8xf32>
  %t5 = exec.gemm(%x, %w) -> %p3 {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %y4 = exec.resource output "y4" : memref<2x8xf32>
  %t6 = exec.dispatch @kernels::@k3_residual(%p3, %y3) -> (%y4) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k1_bias_first(%arg0: tensor<8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
  func.func @k2_mul(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.mul %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
  func.func @k3_residual(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// A bias written after the GEMM (the vocabulary mask of a tensor-parallel
// loss is computed between the logits GEMM and its add) is not there yet
// when the GEMM runs: the add stays.
// CHECK-LABEL: exec.program @late_bias
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[P:.*]] {
// CHECK: exec.dispatch @kernels::@k0_fill
// CHECK: exec.dispatch @kernels::@k1_add(%[[P]],
// REMARK: remark: bias add not fused into a GEMM's epilogue: a command between the GEMM and the add writes the bias
exec.program @late_bias attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x4xf32>
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %c = exec.resource constant {value = dense<1.0> : tensor<8xf32>} : memref<8xf32>
  %p = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %b = exec.resource scratch : memref<8xf32>
  %t1 = exec.dispatch @kernels::@k0_fill(%c) -> (%b) : (memref<8xf32>) -> memref<8xf32>
  %y = exec.resource output "y" : memref<2x8xf32>
  %t2 = exec.dispatch @kernels::@k1_add(%p, %b) -> (%y) : (memref<2x8xf32>, memref<8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k0_fill(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = tg.neg %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
  func.func @k1_add(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}
