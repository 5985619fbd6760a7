// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s --mlir-print-op-generic | tg-opt | FileCheck %s

// Every op of the exec dialect prints and parses back: resources of each
// kind (a parameter with its init rule, moments, inputs, outputs, a
// constant, scratch, new state), views, dispatches of a kernel on memrefs,
// a library GEMM, a copy, the collectives over named mesh axes, and
// timepoints awaited across two streams.

// CHECK-LABEL: exec.program @step
// CHECK-SAME:    mesh_axes = ["data", "tensor"], mesh_shape = array<i64: 2, 4>
exec.program @step attributes {batch_size = 2 : i64, seq_len = 4 : i64,
    vocab_size = 16 : i64, seed = 7 : i64, flops_per_step = 1.0e+03 : f64,
    mesh_axes = ["data", "tensor"], mesh_shape = array<i64: 2, 4>,
    arena_size = 4096 : i64, state_size = 1024 : i64} {
  // CHECK: %[[W:.+]] = exec.resource parameter "w" at 0 {init = #tg.init<normal, std = 0.02>} : memref<4x8xf32>
  %w = exec.resource parameter "w" at 0 {init = #tg.init<normal, std = 0.02>} : memref<4x8xf32>
  // CHECK: exec.resource adam_m "w" at 128 : memref<4x8xf32>
  %m = exec.resource adam_m "w" at 128 : memref<4x8xf32>
  // CHECK: exec.resource adam_v "w" at 256 : memref<4x8xf32>
  %v = exec.resource adam_v "w" at 256 : memref<4x8xf32>
  // CHECK: %[[X:.+]] = exec.resource input "x" at 384 : memref<2x4xf32>
  %x = exec.resource input "x" at 384 : memref<2x4xf32>
  // CHECK: %[[LOSS:.+]] = exec.resource output "loss" at 448 : memref<f32>
  %loss = exec.resource output "loss" at 448 : memref<f32>
  // CHECK: %[[C:.+]] = exec.resource constant at 512 {value = dense<1.000000e+00> : tensor<8xf32>} : memref<8xf32>
  %c = exec.resource constant at 512 {value = dense<1.0> : tensor<8xf32>} : memref<8xf32>
  // CHECK: %[[Y:.+]] = exec.resource scratch at 1024 : memref<2x8xf32>
  %y = exec.resource scratch at 1024 : memref<2x8xf32>
  // A pack and a member in it (exec-fuse-horizontal).
  // CHECK: %[[PACK:.+]] = exec.resource parameter at 1536 : memref<2x16xf32>
  %pack = exec.resource parameter at 1536 : memref<2x16xf32>
  // CHECK: exec.resource parameter "b" in %[[PACK]][16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  %b = exec.resource parameter "b" in %pack[16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  // CHECK: %[[WNEW:.+]] = exec.resource scratch updates(%[[W]] : memref<4x8xf32>) at 0 : memref<4x8xf32>
  %w_new = exec.resource scratch updates(%w : memref<4x8xf32>) at 0 : memref<4x8xf32>
  // CHECK: %[[FLAT:.+]] = exec.view %[[Y]] : memref<2x8xf32> to memref<16xf32>
  %flat = exec.view %y : memref<2x8xf32> to memref<16xf32>
  // CHECK: exec.view %[[Y]][8] : memref<2x8xf32> to memref<2x4xf32>
  %half = exec.view %y[8] : memref<2x8xf32> to memref<2x4xf32>
  // CHECK: %[[T0:.+]] = exec.gemm(%[[X]], %[[W]]) -> %[[Y]] {batch = 1 : i64, k = 4 : i64, m = 2 : i64, n = 8 : i64, stride_a = 8 : i64, stride_b = 0 : i64, stride_c = 16 : i64} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %y {m = 2, n = 8, k = 4, batch = 1, stride_a = 8, stride_b = 0, stride_c = 16} : memref<2x4xf32>, memref<4x8xf32> -> memref<2x8xf32>
  // The weight gradient x^T dy, on stream 1: transposes are unit attributes.
  // CHECK: exec.gemm(%[[X]], %[[Y]]) -> %[[W]] await(%[[T0]]) on 1 {{{.*}}transpose_a} : memref<2x4xf32>, memref<2x8xf32> -> memref<4x8xf32>
  %tg = exec.gemm(%x, %y) -> %w await(%t0) on 1 {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 16, stride_c = 32, transpose_a} : memref<2x4xf32>, memref<2x8xf32> -> memref<4x8xf32>
  // CHECK: %[[T1:.+]] = exec.dispatch @kernels::@k0_add(%[[Y]], %[[C]]) -> (%[[Y]]) await(%[[T0]]) : (memref<2x8xf32>, memref<8xf32>) -> memref<2x8xf32>
  %t1 = exec.dispatch @kernels::@k0_add(%y, %c) -> (%y) await(%t0) : (memref<2x8xf32>, memref<8xf32>) -> (memref<2x8xf32>)
  // CHECK: %[[T2:.+]] = exec.all_reduce sum %[[FLAT]] -> %[[FLAT]] over "data" await(%[[T1]]) on 1 : memref<16xf32> -> memref<16xf32>
  %t2 = exec.all_reduce sum %flat -> %flat over "data" await(%t1) on 1 : memref<16xf32> -> memref<16xf32>
  // CHECK: exec.reduce_scatter avg %[[FLAT]] -> %{{.+}} over "tensor" await(%[[T2]]) on 1 : memref<16xf32> -> memref<4xf32>
  %part = exec.resource scratch at 1152 : memref<4xf32>
  %t3 = exec.reduce_scatter avg %flat -> %part over "tensor" await(%t2) on 1 : memref<16xf32> -> memref<4xf32>
  // CHECK: exec.all_gather %{{.+}} -> %[[FLAT]] over "tensor" await({{.+}}) on 1 : memref<4xf32> -> memref<16xf32>
  %t4 = exec.all_gather %part -> %flat over "tensor" await(%t3) on 1 : memref<4xf32> -> memref<16xf32>
  // CHECK: exec.send %[[FLAT]] to 1 over "data" await({{.+}}) on 1 : memref<16xf32>
  %t5 = exec.send %flat to 1 over "data" await(%t4) on 1 : memref<16xf32>
  // CHECK: exec.recv %[[FLAT]] from 1 over "data" await({{.+}}) on 1 : memref<16xf32>
  %t6 = exec.recv %flat from 1 over "data" await(%t5) on 1 : memref<16xf32>
  // CHECK: exec.copy %[[WNEW]] -> %[[W]] await(%[[T1]], {{.+}}) : memref<4x8xf32> -> memref<4x8xf32>
  %t7 = exec.copy %w_new -> %w await(%t1, %t6) : memref<4x8xf32> -> memref<4x8xf32>
}

// CHECK-LABEL: module @kernels
module @kernels {
  func.func @k0_add(%a: memref<2x8xf32>, %b: memref<8xf32>, %out: memref<2x8xf32>) {
    return
  }
}

// A serialized kernel module.
// CHECK-DAG: exec.binary @compiled elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 3>, symbols = ["k0_packed"], target_cpu = "znver3"}
// CHECK-DAG: exec.binary @gpu ptx {image = ".version 8.0", kernels = ["k0"], launch_block = array<i64: 256, 1024>, launch_counts = array<i64: 2>, launch_grid = array<i64: 1056, 1>, launch_shared_bytes = array<i64: 0, 128>, launch_symbols = ["k0_0", "k0_1"], operand_counts = array<i64: 3>, symbols = ["k0"], target_cpu = "sm_90a"}
exec.binary @gpu ptx {image = ".version 8.0", kernels = ["k0"], operand_counts = array<i64: 3>, symbols = ["k0"], target_cpu = "sm_90a", launch_counts = array<i64: 2>, launch_symbols = ["k0_0", "k0_1"], launch_grid = array<i64: 1056, 1>, launch_block = array<i64: 256, 1024>, launch_shared_bytes = array<i64: 0, 128>}
exec.binary @compiled elf {image = "\7FELF", kernels = ["k0"], operand_counts = array<i64: 3>, symbols = ["k0_packed"], target_cpu = "znver3"}

// Dispatch regions group ops on tensors before bufferization.
// CHECK-LABEL: func.func @regions
// CHECK: %[[R:.+]]:2 = exec.dispatch_region -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:   %[[A:.+]] = tg.exp
// CHECK:   %[[B:.+]] = tg.neg %[[A]]
// CHECK:   exec.yield %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>
// CHECK: }
func.func @regions(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r:2 = exec.dispatch_region -> (tensor<4xf32>, tensor<4xf32>) {
    %a = tg.exp %x : tensor<4xf32>
    %b = tg.neg %a : tensor<4xf32>
    exec.yield %a, %b : tensor<4xf32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}
