// RUN: tg-opt %s --split-input-file --exec-insert-timepoints | FileCheck %s

// Each command awaits exactly the earlier commands it conflicts with:
// read after write, write after write and write after read, through views;
// two reads of one buffer do not conflict, so the two GEMMs reading %x are
// independent, and the all-reduce in place waits for the last writer.
// CHECK-LABEL: exec.program @deps
// CHECK:         %[[T0:.+]] = exec.gemm(%[[X:.+]], %[[W:.+]]) -> %[[Y:[^ ]+]] {
// CHECK:         %[[T1:.+]] = exec.gemm(%[[X]], %[[W]]) -> %[[Y2:[^ ]+]] {
// RAW on %y, through the view %flat:
// CHECK:         %[[T2:.+]] = exec.dispatch @kernels::@k_relu(%[[FLAT:.+]]) -> (%[[Z:.+]]) await(%[[T0]])
// WAR on %y (read by T2) and WAW on %y (written by T0):
// CHECK:         %[[T3:.+]] = exec.copy %[[Y2]] -> %[[Y]] await(%[[T1]], %[[T0]], %[[T2]])
// In place: reads and writes %z, after its writer T2.
// CHECK:         %[[T4:.+]] = exec.all_reduce sum %[[Z]] -> %[[Z]] over "data" await(%[[T2]])
// Overwriting the input read (through a view) by both GEMMs waits for both:
// CHECK:         exec.copy %{{.+}} -> %[[XR:.+]] await(%[[T0]], %[[T1]])
exec.program @deps attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %x = exec.resource input "x" : memref<16xf32>
  %xm = exec.view %x : memref<16xf32> to memref<4x4xf32>
  %y = exec.resource scratch : memref<4x8xf32>
  %y2 = exec.resource scratch : memref<4x8xf32>
  %flat = exec.view %y : memref<4x8xf32> to memref<32xf32>
  %z = exec.resource scratch : memref<32xf32>
  %t0 = exec.gemm(%xm, %w) -> %y {m = 4, n = 8, k = 4, batch = 1, stride_a = 16, stride_b = 0, stride_c = 32} : memref<4x4xf32>, memref<4x8xf32> -> memref<4x8xf32>
  %t1 = exec.gemm(%xm, %w) -> %y2 {m = 4, n = 8, k = 4, batch = 1, stride_a = 16, stride_b = 0, stride_c = 32} : memref<4x4xf32>, memref<4x8xf32> -> memref<4x8xf32>
  %t2 = exec.dispatch @kernels::@k_relu(%flat) -> (%z) : (memref<32xf32>) -> (memref<32xf32>)
  %t3 = exec.copy %y2 -> %y : memref<4x8xf32> -> memref<4x8xf32>
  %t4 = exec.all_reduce sum %z -> %z over "data" : memref<32xf32> -> memref<32xf32>
  %zh = exec.resource scratch : memref<16xf32>
  %t5 = exec.copy %zh -> %x : memref<16xf32> -> memref<16xf32>
}
module @kernels {
  func.func @k_relu(%in: memref<32xf32>, %out: memref<32xf32>) {
    return
  }
}
