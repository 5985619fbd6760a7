// RUN: tg-opt %s --split-input-file --exec-insert-timepoints --exec-stream-weight-gradients | FileCheck %s
// RUN: not tg-opt %s --split-input-file --exec-insert-timepoints --exec-stream-weight-gradients="stream=1" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not tg-opt %s --split-input-file --exec-insert-timepoints --exec-plan-buffers --exec-stream-weight-gradients 2>&1 | FileCheck %s --check-prefix=PLANNED

// A backward pass: the forward product %y, an input gradient %dx that the
// next kernel reads, two weight gradients %gw and %gv that only the update
// at the end reads, and a last product %dz. The weight gradients' GEMMs
// move to stream 2 with the awaits insert-timepoints gave them; the others
// stay, the last product too (nothing after it to run beside). The main stream joins %gw's GEMM at its first command after %gv's
// (the dispatch t5); %gv's is awaited by the update, which reads it.
// CHECK-LABEL: exec.program @backward
// CHECK:         %[[T0:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} {
// CHECK:         %[[T1:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} await(%[[T0]]) {
// CHECK:         %[[T2:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} await(%[[T0]]) on 2 {
// CHECK:         %[[T3:.+]] = exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T1]])
// CHECK:         %[[T4:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} await(%[[T3]]) on 2 {
// CHECK:         %[[T5:.+]] = exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T3]], %[[T2]])
// CHECK:         %[[T6:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} await(%[[T5]]) {
// CHECK:         exec.dispatch @kernels::@k_add(%{{.+}}, %{{.+}}) -> (%{{.+}}) await(%[[T2]], %[[T4]])
// CHECK-NOT:     on 2
exec.program @backward attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x4xf32>
  %x = exec.resource input "x" : memref<4x4xf32>
  %y = exec.resource scratch : memref<4x4xf32>
  %dx = exec.resource scratch : memref<4x4xf32>
  %gw = exec.resource scratch : memref<4x4xf32>
  %h = exec.resource scratch : memref<4x4xf32>
  %gv = exec.resource scratch : memref<4x4xf32>
  %h2 = exec.resource scratch : memref<4x4xf32>
  %dz = exec.resource scratch : memref<4x4xf32>
  %out = exec.resource output "out" : memref<4x4xf32>
  %t0 = exec.gemm(%x, %w) -> %y {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t1 = exec.gemm(%y, %w) -> %dx {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t2 = exec.gemm(%x, %y) -> %gw {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0, transpose_a} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t3 = exec.dispatch @kernels::@k_neg(%dx) -> (%h) : (memref<4x4xf32>) -> (memref<4x4xf32>)
  %t4 = exec.gemm(%x, %h) -> %gv {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0, transpose_a} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t5 = exec.dispatch @kernels::@k_neg(%h) -> (%h2) : (memref<4x4xf32>) -> (memref<4x4xf32>)
  %t6 = exec.gemm(%h2, %w) -> %dz {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t7 = exec.dispatch @kernels::@k_add(%gw, %gv) -> (%out) : (memref<4x4xf32>, memref<4x4xf32>) -> (memref<4x4xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %y = tg.neg %x : tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
  func.func @k_add(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %y = tg.add %a, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
// BAD: error: exec-stream-weight-gradients: stream 1 is the main or the communication stream; give 2 or more
// A planned program's commands of one stream may rely on their order.
// PLANNED: error: 'exec.program' op is already planned: run exec-stream-weight-gradients before exec-plan-buffers

// -----

// A product that a command reads before the last product (%y2, read by the
// GEMM t1) stays on the main stream: the backward waits for it. So does the
// last product.
// CHECK-LABEL: exec.program @read_soon
// CHECK-NOT:     on 2
exec.program @read_soon attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x4xf32>
  %x = exec.resource input "x" : memref<4x4xf32>
  %y2 = exec.resource scratch : memref<4x4xf32>
  %out = exec.resource output "out" : memref<4x4xf32>
  %t0 = exec.gemm(%x, %w) -> %y2 {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t1 = exec.gemm(%y2, %w) -> %out {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
}

// -----

// Rows of one pack: the GEMM writes %ga, row 0 of %g, which nothing
// touches again before the last product; t1 writes row 1 (%gb) in between,
// which does not keep the GEMM on the main stream (t1 awaits it: the pack
// is one storage to the dependencies). The last moved GEMM is joined at the
// main stream's first command after the last product (t3).
// CHECK-LABEL: exec.program @pack_rows
// CHECK:         %[[T0:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} on 2 {
// CHECK:         exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T0]])
// CHECK:         %[[T2:.+]] = exec.gemm(%{{.+}}, %{{.+}}) -> %{{[^ ]+}} {
// CHECK:         exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T2]], %[[T0]])
exec.program @pack_rows attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x4xf32>
  %x = exec.resource input "x" : memref<4x4xf32>
  %g = exec.resource scratch : memref<2x16xf32>
  %ga = exec.resource scratch in %g[0] : memref<2x16xf32> : memref<4x4xf32>
  %gb = exec.resource scratch in %g[16] : memref<2x16xf32> : memref<4x4xf32>
  %y = exec.resource scratch : memref<4x4xf32>
  %out = exec.resource output "out" : memref<4x4xf32>
  %t0 = exec.gemm(%x, %w) -> %ga {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0, transpose_a} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t1 = exec.dispatch @kernels::@k_neg(%x) -> (%gb) : (memref<4x4xf32>) -> (memref<4x4xf32>)
  %t2 = exec.gemm(%x, %w) -> %y {m = 4, n = 4, k = 4, batch = 1, stride_a = 0, stride_b = 0, stride_c = 0} : memref<4x4xf32>, memref<4x4xf32> -> memref<4x4xf32>
  %t3 = exec.dispatch @kernels::@k_neg(%y) -> (%out) : (memref<4x4xf32>) -> (memref<4x4xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %y = tg.neg %x : tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
