// RUN: tg-opt %s --split-input-file --exec-schedule-collectives --verify-diagnostics | FileCheck %s
// RUN: tg-opt %s --split-input-file --exec-schedule-collectives=comm-stream=2 --verify-diagnostics | FileCheck %s --check-prefix=STREAM2

// Gradient all-reduces, written after the whole backward pass, move up to
// just after the command that writes their gradient, and run on the
// communication stream (1): the all-reduce of %g1 is issued while %g2 is
// still being computed. The resources they use move with them. The
// all-reduce of %g2 stops after its writer too, and the loss's after the
// last write of %loss, not before the read of %g1's result that lies
// between them (it does not conflict).
// CHECK-LABEL: exec.program @gradients
// CHECK:         %[[G1:.+]] = exec.resource scratch : memref<8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_grad(%{{.+}}) -> (%[[G1]])
// CHECK-NEXT:    exec.all_reduce avg %[[G1]] -> %[[G1]] over "data" on 1
// CHECK-NEXT:    %[[G2:.+]] = exec.resource scratch : memref<4x8xf32>
// CHECK-NEXT:    %[[FLAT:.+]] = exec.view %[[G2]]
// CHECK-NEXT:    exec.dispatch @kernels::@k_grad32(%{{.+}}) -> (%[[FLAT]])
// CHECK-NEXT:    %[[G2AVG:.+]] = exec.resource scratch : memref<4x8xf32>
// CHECK-NEXT:    exec.all_reduce avg %[[G2]] -> %[[G2AVG]] over "data" on 1
// CHECK-NEXT:    %[[L:.+]] = exec.resource scratch : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_loss(%{{.+}}) -> (%[[L]])
// CHECK-NEXT:    %[[LOSS:.+]] = exec.resource output "loss" : memref<f32>
// CHECK-NEXT:    exec.all_reduce avg %[[L]] -> %[[LOSS]] over "data" on 1
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.dispatch @kernels::@k_norm(%[[G1]])
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.dispatch @kernels::@k_norm2d(%[[G2AVG]])
// STREAM2-LABEL: exec.program @gradients
// STREAM2:         exec.all_reduce avg %{{.+}} -> %{{.+}} over "data" on 2
exec.program @gradients attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g1 = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%g1) : (memref<8xf32>) -> (memref<8xf32>)
  %g2 = exec.resource scratch : memref<4x8xf32>
  %flat = exec.view %g2 : memref<4x8xf32> to memref<32xf32>
  %t1 = exec.dispatch @kernels::@k_grad32(%x) -> (%flat) : (memref<8xf32>) -> (memref<32xf32>)
  %l = exec.resource scratch : memref<f32>
  %t2 = exec.dispatch @kernels::@k_loss(%x) -> (%l) : (memref<8xf32>) -> (memref<f32>)
  %t3 = exec.all_reduce avg %g1 -> %g1 over "data" : memref<8xf32> -> memref<8xf32>
  %n1 = exec.resource scratch : memref<f32>
  %t4 = exec.dispatch @kernels::@k_norm(%g1) -> (%n1) : (memref<8xf32>) -> (memref<f32>)
  %g2avg = exec.resource scratch : memref<4x8xf32>
  %t5 = exec.all_reduce avg %g2 -> %g2avg over "data" : memref<4x8xf32> -> memref<4x8xf32>
  %loss = exec.resource output "loss" : memref<f32>
  %t6 = exec.all_reduce avg %l -> %loss over "data" : memref<f32> -> memref<f32>
  %n2 = exec.resource scratch : memref<f32>
  %t7 = exec.dispatch @kernels::@k_norm2d(%g2avg) -> (%n2) : (memref<4x8xf32>) -> (memref<f32>)
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_grad32(%in: memref<8xf32>, %out: memref<32xf32>) { return }
  func.func @k_loss(%in: memref<8xf32>, %out: memref<f32>) { return }
  func.func @k_norm(%in: memref<8xf32>, %out: memref<f32>) { return }
  func.func @k_norm2d(%in: memref<4x8xf32>, %out: memref<f32>) { return }
}

// -----

// A collective never crosses a command it conflicts with: one that reads
// its target (write after read, here through a view), one that writes the
// buffer it reads, or one whose timepoint it awaits. A collective over
// another axis than "data" moves too, but stays on its stream.
// CHECK-LABEL: exec.program @barriers
// CHECK:         exec.dispatch @kernels::@k_read(%[[TV:.+]]) -> (%{{.+}})
// CHECK-NEXT:    exec.all_reduce sum %{{.+}} -> %[[T:.+]] over "data" on 1
// CHECK:         exec.dispatch @kernels::@k_write
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.all_gather %{{.+}} -> %{{.+}} over "tensor" :
// CHECK:         %[[AW:.+]] = exec.dispatch @kernels::@k_other
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.reduce_scatter max %{{.+}} -> %{{.+}} over "tensor" await(%[[AW]]) :
exec.program @barriers attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data", "tensor"], mesh_shape = array<i64: 2, 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %s = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%s) : (memref<8xf32>) -> (memref<8xf32>)
  %t = exec.resource scratch : memref<8xf32>
  %tv = exec.view %t : memref<8xf32> to memref<2x4xf32>
  %r = exec.resource scratch : memref<8xf32>
  %t1 = exec.dispatch @kernels::@k_read(%tv) -> (%r) : (memref<2x4xf32>) -> (memref<8xf32>)
  %u = exec.resource scratch : memref<8xf32>
  %t2 = exec.dispatch @kernels::@k_grad(%x) -> (%u) : (memref<8xf32>) -> (memref<8xf32>)
  %t3 = exec.all_reduce sum %s -> %t over "data" : memref<8xf32> -> memref<8xf32>
  %p = exec.resource scratch : memref<4xf32>
  %t4 = exec.dispatch @kernels::@k_write(%x) -> (%p) : (memref<8xf32>) -> (memref<4xf32>)
  %v = exec.resource scratch : memref<8xf32>
  %t5 = exec.dispatch @kernels::@k_grad(%x) -> (%v) : (memref<8xf32>) -> (memref<8xf32>)
  %all = exec.resource scratch : memref<8xf32>
  %t6 = exec.all_gather %p -> %all over "tensor" : memref<4xf32> -> memref<8xf32>
  %o = exec.resource scratch : memref<8xf32>
  %t7 = exec.dispatch @kernels::@k_other(%x) -> (%o) : (memref<8xf32>) -> (memref<8xf32>)
  %w = exec.resource scratch : memref<8xf32>
  %t8 = exec.dispatch @kernels::@k_grad(%x) -> (%w) : (memref<8xf32>) -> (memref<8xf32>)
  %part = exec.resource scratch : memref<4xf32>
  %t9 = exec.reduce_scatter max %x -> %part over "tensor" await(%t7) : memref<8xf32> -> memref<4xf32>
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_read(%in: memref<2x4xf32>, %out: memref<8xf32>) { return }
  func.func @k_write(%in: memref<8xf32>, %out: memref<4xf32>) { return }
  func.func @k_other(%in: memref<8xf32>, %out: memref<8xf32>) { return }
}

// -----

// Nothing writes the input: the all-reduce of it moves to the top.
// CHECK-LABEL: exec.program @input
// CHECK-NEXT:    %[[X:.+]] = exec.resource input "x"
// CHECK-NEXT:    %[[Y:.+]] = exec.resource scratch
// CHECK-NEXT:    exec.all_reduce sum %[[X]] -> %[[Y]] over "data" on 1
// CHECK-NEXT:    exec.resource input "w"
// CHECK-NEXT:    exec.resource scratch
// CHECK-NEXT:    exec.dispatch
exec.program @input attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %w = exec.resource input "w" : memref<8xf32>
  %z = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%w) -> (%z) : (memref<8xf32>) -> (memref<8xf32>)
  %x = exec.resource input "x" : memref<8xf32>
  %y = exec.resource scratch : memref<8xf32>
  %t1 = exec.all_reduce sum %x -> %y over "data" : memref<8xf32> -> memref<8xf32>
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
}

// -----

// After planning, the commands of a stream rely on their order: too late.
// expected-error @+1 {{'exec.program' op is already planned: run exec-schedule-collectives before exec-plan-buffers}}
exec.program @planned attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, arena_size = 0 : i64} {
}

// -----

// ZeRO-1's collectives: a gradient's reduce-scatter moves up to just after
// the command writing the gradient, and the all-gather of an updated chunk
// to just after the update; both on the communication stream. The slice of
// the gathered parameter stays after its all-gather.
// CHECK-LABEL: exec.program @zero
// CHECK:         exec.dispatch @kernels::@k_grad(%{{.+}}) -> (%[[G:[0-9]+]])
// CHECK-NEXT:    %[[S:.+]] = exec.resource scratch : memref<4xf32>
// CHECK-NEXT:    exec.reduce_scatter avg %[[G]] -> %[[S]] over "data" on 1 : memref<8xf32> -> memref<4xf32>
// CHECK-NEXT:    exec.resource scratch : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_loss
// CHECK:         exec.dispatch @kernels::@k_update(%[[S]]) -> (%[[U:[0-9]+]])
// CHECK-NEXT:    %[[A:.+]] = exec.resource scratch : memref<8xf32>
// CHECK-NEXT:    exec.all_gather %[[U]] -> %[[A]] over "data" on 1 : memref<4xf32> -> memref<8xf32>
// CHECK-NEXT:    exec.resource scratch : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_norm
// CHECK:         exec.dispatch @kernels::@k_slice(%[[A]])
exec.program @zero attributes {batch_size = 4 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<8xf32>
  %g = exec.resource scratch : memref<8xf32>
  %t0 = exec.dispatch @kernels::@k_grad(%x) -> (%g) : (memref<8xf32>) -> (memref<8xf32>)
  %l = exec.resource scratch : memref<f32>
  %t1 = exec.dispatch @kernels::@k_loss(%x) -> (%l) : (memref<8xf32>) -> (memref<f32>)
  %s = exec.resource scratch : memref<4xf32>
  %t2 = exec.reduce_scatter avg %g -> %s over "data" : memref<8xf32> -> memref<4xf32>
  %u = exec.resource scratch : memref<4xf32>
  %t3 = exec.dispatch @kernels::@k_update(%s) -> (%u) : (memref<4xf32>) -> (memref<4xf32>)
  %n = exec.resource scratch : memref<f32>
  %t4 = exec.dispatch @kernels::@k_norm(%x) -> (%n) : (memref<8xf32>) -> (memref<f32>)
  %a = exec.resource scratch : memref<8xf32>
  %t5 = exec.all_gather %u -> %a over "data" : memref<4xf32> -> memref<8xf32>
  %p = exec.resource scratch : memref<8xf32>
  %t6 = exec.dispatch @kernels::@k_slice(%a) -> (%p) : (memref<8xf32>) -> (memref<8xf32>)
}
module @kernels {
  func.func @k_grad(%in: memref<8xf32>, %out: memref<8xf32>) { return }
  func.func @k_loss(%in: memref<8xf32>, %out: memref<f32>) { return }
  func.func @k_update(%in: memref<4xf32>, %out: memref<4xf32>) { return }
  func.func @k_norm(%in: memref<8xf32>, %out: memref<f32>) { return }
  func.func @k_slice(%in: memref<8xf32>, %out: memref<8xf32>) { return }
}
