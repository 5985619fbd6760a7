// RUN: tg-opt %s --split-input-file --exec-bucket-gradients --verify-diagnostics | FileCheck %s
// RUN: tg-opt %s --split-input-file --verify-diagnostics --exec-bucket-gradients=bucket-bytes=64 | FileCheck %s --check-prefix=SMALL
// RUN: tg-opt %s --split-input-file --verify-diagnostics --exec-bucket-gradients=bucket-bytes=0 | FileCheck %s --check-prefix=NONE

// Three gradients reduced in place as their writers finish (as
// exec-schedule-collectives leaves them): they move into one buffer, each a
// view at its offset (each on a 64-byte boundary), and one all-reduce of it
// replaces theirs where the last one was. The loss's all-reduce (into an output) stays.
// CHECK-LABEL: exec.program @gradients
// CHECK:         %[[B:.+]] = exec.resource scratch : memref<52xf32>
// CHECK-NEXT:    %[[G1:.+]] = exec.view %[[B]][0] : memref<52xf32> to memref<8xf32>
// CHECK-NEXT:    %[[G2:.+]] = exec.view %[[B]][16] : memref<52xf32> to memref<4x8xf32>
// CHECK-NEXT:    %[[G3:.+]] = exec.view %[[B]][48] : memref<52xf32> to memref<4xf32>
// CHECK:         exec.dispatch @kernels::@k_grad(%{{.+}}) -> (%[[G1]])
// CHECK-NEXT:    %[[FLAT:.+]] = exec.view %[[G2]] : memref<4x8xf32> to memref<32xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_grad32(%{{.+}}) -> (%[[FLAT]])
// CHECK-NEXT:    exec.dispatch @kernels::@k_grad4(%{{.+}}) -> (%[[G3]])
// CHECK-NEXT:    exec.all_reduce avg %[[B]] -> %[[B]] over "data" on 1 : memref<52xf32> -> memref<52xf32>
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    %[[LOSS:.+]] = exec.resource output "loss"
// CHECK-NEXT:    exec.all_reduce avg %{{.+}} -> %[[LOSS]] over "data" on 1
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.dispatch @kernels::@k_norm(%[[G1]])
// CHECK-NOT:     exec.all_reduce
// A bucket of at most 64 bytes takes g1 (32 bytes) alone, which stays as
// it was; g2 (128 bytes) does not fit one either; g3 is alone too.
// SMALL-LABEL: exec.program @gradients
// SMALL-NOT:     exec.view %{{.+}}[
// SMALL-COUNT-3: exec.all_reduce avg %[[G:.+]] -> %[[G]] over "data" on 1
// NONE-LABEL:  exec.program @gradients
// NONE-COUNT-3:  exec.all_reduce avg %[[G:.+]] -> %[[G]] over "data" on 1
exec.program @gradients attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g1 = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%g1) : (memref<8xf32>) -> (memref<8xf32>)
  %t1 = exec.all_reduce avg %g1 -> %g1 over "data" on 1 : memref<8xf32> -> memref<8xf32>
  %g2 = exec.resource scratch : memref<4x8xf32>
  %flat = exec.view %g2 : memref<4x8xf32> to memref<32xf32>
  %t2 = exec.dispatch @kernels::@k_grad32(%x) -> (%flat) : (memref<8xf32>) -> (memref<32xf32>)
  %t3 = exec.all_reduce avg %g2 -> %g2 over "data" on 1 : memref<4x8xf32> -> memref<4x8xf32>
  %g3 = exec.resource scratch : memref<4xf32>
  %t4 = exec.dispatch @kernels::@k_grad4(%x) -> (%g3) : (memref<8xf32>) -> (memref<4xf32>)
  %t5 = exec.all_reduce avg %g3 -> %g3 over "data" on 1 : memref<4xf32> -> memref<4xf32>
  %l = exec.resource scratch : memref<f32>
  %loss = exec.resource output "loss" : memref<f32>
  %t6 = exec.all_reduce avg %l -> %loss over "data" on 1 : memref<f32> -> memref<f32>
  %n1 = exec.resource scratch : memref<f32>
  %t7 = exec.dispatch @kernels::@k_norm(%g1) -> (%n1) : (memref<8xf32>) -> (memref<f32>)
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_grad32(%in: memref<8xf32>, %out: memref<32xf32>) { return }
  func.func @k_grad4(%in: memref<8xf32>, %out: memref<4xf32>) { return }
  func.func @k_norm(%in: memref<8xf32>, %out: memref<f32>) { return }
}

// -----

// A command that reads a gradient already in the bucket closes it: %g1's
// all-reduce stays, %g2 and %g3 share the next bucket.
// CHECK-LABEL: exec.program @reader_between
// CHECK:         %[[B:.+]] = exec.resource scratch : memref<20xf32>
// CHECK-NEXT:    %[[G2:.+]] = exec.view %[[B]][0] : memref<20xf32> to memref<8xf32>
// CHECK-NEXT:    %[[G3:.+]] = exec.view %[[B]][16] : memref<20xf32> to memref<4xf32>
// CHECK:         %[[G1:.+]] = exec.resource scratch : memref<8xf32>
// CHECK:         exec.all_reduce avg %[[G1]] -> %[[G1]] over "data" on 1 : memref<8xf32>
// CHECK:         exec.dispatch @kernels::@k_norm(%[[G1]])
// CHECK:         exec.dispatch @kernels::@k_grad(%{{.+}}) -> (%[[G2]])
// CHECK-NEXT:    exec.dispatch @kernels::@k_grad4(%{{.+}}) -> (%[[G3]])
// CHECK-NEXT:    exec.all_reduce avg %[[B]] -> %[[B]] over "data" on 1 : memref<20xf32>
exec.program @reader_between attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g1 = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%g1) : (memref<8xf32>) -> (memref<8xf32>)
  %t1 = exec.all_reduce avg %g1 -> %g1 over "data" on 1 : memref<8xf32> -> memref<8xf32>
  %n1 = exec.resource scratch : memref<f32>
  %t2 = exec.dispatch @kernels::@k_norm(%g1) -> (%n1) : (memref<8xf32>) -> (memref<f32>)
  %g2 = exec.resource scratch : memref<8xf32>
  %t3 = exec.dispatch @kernels::@k_grad(%x) -> (%g2) : (memref<8xf32>) -> (memref<8xf32>)
  %t4 = exec.all_reduce avg %g2 -> %g2 over "data" on 1 : memref<8xf32> -> memref<8xf32>
  %g3 = exec.resource scratch : memref<4xf32>
  %t5 = exec.dispatch @kernels::@k_grad4(%x) -> (%g3) : (memref<8xf32>) -> (memref<4xf32>)
  %t6 = exec.all_reduce avg %g3 -> %g3 over "data" on 1 : memref<4xf32> -> memref<4xf32>
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_grad32(%in: memref<8xf32>, %out: memref<32xf32>) { return }
  func.func @k_grad4(%in: memref<8xf32>, %out: memref<4xf32>) { return }
  func.func @k_norm(%in: memref<8xf32>, %out: memref<f32>) { return }
}

// -----

// Each gradient starts on a 64-byte boundary (16 f32), as every buffer of
// the arena does: 3 elements, then 5 at element 16, then 2 at 32.
// CHECK-LABEL: exec.program @aligned
// CHECK:         %[[B:.+]] = exec.resource scratch : memref<34xf32>
// CHECK-NEXT:    exec.view %[[B]][0] : memref<34xf32> to memref<3xf32>
// CHECK-NEXT:    exec.view %[[B]][16] : memref<34xf32> to memref<5xf32>
// CHECK-NEXT:    exec.view %[[B]][32] : memref<34xf32> to memref<2xf32>
// CHECK:         exec.all_reduce avg %[[B]] -> %[[B]] over "data" on 1 : memref<34xf32>
exec.program @aligned attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g1 = exec.resource scratch : memref<3xf32>
  %t0 = exec.dispatch @kernels::@k3(%x) -> (%g1) : (memref<8xf32>) -> (memref<3xf32>)
  %t1 = exec.all_reduce avg %g1 -> %g1 over "data" on 1 : memref<3xf32> -> memref<3xf32>
  %g2 = exec.resource scratch : memref<5xf32>
  %t2 = exec.dispatch @kernels::@k5(%x) -> (%g2) : (memref<8xf32>) -> (memref<5xf32>)
  %t3 = exec.all_reduce avg %g2 -> %g2 over "data" on 1 : memref<5xf32> -> memref<5xf32>
  %g3 = exec.resource scratch : memref<2xf32>
  %t4 = exec.dispatch @kernels::@k2(%x) -> (%g3) : (memref<8xf32>) -> (memref<2xf32>)
  %t5 = exec.all_reduce avg %g3 -> %g3 over "data" on 1 : memref<2xf32> -> memref<2xf32>
}
module @kernels {
  func.func @k3(%in: memref<8xf32>, %out: memref<3xf32>) { return }
  func.func @k5(%in: memref<8xf32>, %out: memref<5xf32>) { return }
  func.func @k2(%in: memref<8xf32>, %out: memref<2xf32>) { return }
}

// -----

// A planned program is refused: the bucket would have no place in the arena.
// expected-error @+1 {{'exec.program' op is already planned: run exec-bucket-gradients before exec-plan-buffers}}
exec.program @planned attributes {arena_size = 64 : i64, batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
}

// -----

// Gradients of other element types or reductions go to buckets of their own.
// CHECK-LABEL: exec.program @kinds
// CHECK-NOT:     exec.view
// CHECK-COUNT-2: exec.all_reduce
exec.program @kinds attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g1 = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%g1) : (memref<8xf32>) -> (memref<8xf32>)
  %t1 = exec.all_reduce avg %g1 -> %g1 over "data" on 1 : memref<8xf32> -> memref<8xf32>
  %g2 = exec.resource scratch : memref<8xf32>
  %t2 = exec.dispatch @kernels::@k_grad(%x) -> (%g2) : (memref<8xf32>) -> (memref<8xf32>)
  %t3 = exec.all_reduce sum %g2 -> %g2 over "data" on 1 : memref<8xf32> -> memref<8xf32>
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_grad32(%in: memref<8xf32>, %out: memref<32xf32>) { return }
  func.func @k_grad4(%in: memref<8xf32>, %out: memref<4xf32>) { return }
  func.func @k_norm(%in: memref<8xf32>, %out: memref<f32>) { return }
}

// -----

// A negative size is refused.
// RUN: not tg-opt %s --split-input-file --exec-bucket-gradients=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: exec-bucket-gradients: option 'bucket-bytes' must be >= 0, got -1
exec.program @bad attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
}
