// RUN: tg-opt %s --split-input-file --exec-plan-buffers --verify-diagnostics | FileCheck %s

// Reuse. State first, in program order, 64-byte aligned: w [0, 128),
// x [128, 192), loss [192, 196) -> the state region is 256 bytes. Scratch
// first fit in command order: %a at 256, %b at 384 while %a is still read;
// %a's last reader is t1, so %c (first written at t2) takes its place.
// CHECK-LABEL: exec.program @reuse
// CHECK-SAME:    arena_size = 512 : i64
// CHECK-SAME:    state_size = 256 : i64
// CHECK:         exec.resource parameter "w" at 0 : memref<4x8xf32>
// CHECK:         exec.resource input "x" at 128 : memref<4x4xf32>
// CHECK:         exec.resource output "loss" at 192 : memref<f32>
// CHECK:         exec.resource scratch at 256 : memref<4x8xf32>
// CHECK:         exec.resource scratch at 384 : memref<4x8xf32>
// CHECK:         exec.resource scratch at 256 : memref<4x8xf32>
// CHECK-NOT:     exec.copy
exec.program @reuse attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %x = exec.resource input "x" : memref<4x4xf32>
  %loss = exec.resource output "loss" : memref<f32>
  %a = exec.resource scratch : memref<4x8xf32>
  %b = exec.resource scratch : memref<4x8xf32>
  %c = exec.resource scratch : memref<4x8xf32>
  %t0 = exec.gemm(%x, %w) -> %a {m = 4, n = 8, k = 4, batch = 1, stride_a = 16, stride_b = 0, stride_c = 32} : memref<4x4xf32>, memref<4x8xf32> -> memref<4x8xf32>
  %t1 = exec.dispatch @kernels::@k_neg(%a) -> (%b) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t2 = exec.dispatch @kernels::@k_neg(%b) -> (%c) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t3 = exec.dispatch @kernels::@k_sum(%c) -> (%loss) : (memref<4x8xf32>) -> (memref<f32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %y = tg.neg %x : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
  func.func @k_sum(%x: tensor<4x8xf32>) -> tensor<f32> {
    %y = tg.reduce_sum %x [0, 1] : tensor<4x8xf32> -> tensor<f32>
    return %y : tensor<f32>
  }
}

// -----

// In-place update: the new weight is computed by an elementwise kernel that
// is the last reader of the old one, so it is written over it (offset 0)
// and nothing is copied back. The constant is state: [128, 132).
// CHECK-LABEL: exec.program @in_place
// CHECK-SAME:    arena_size = 192 : i64
// CHECK-SAME:    state_size = 192 : i64
// CHECK:         %[[W:.+]] = exec.resource parameter "w" at 0 : memref<4x8xf32>
// CHECK:         exec.resource constant at 128
// CHECK:         exec.resource scratch updates(%[[W]] : memref<4x8xf32>) at 0 : memref<4x8xf32>
// CHECK-NOT:     exec.copy
exec.program @in_place attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %c = exec.resource constant {value = dense<0.5> : tensor<f32>} : memref<f32>
  %w_new = exec.resource scratch updates(%w : memref<4x8xf32>) : memref<4x8xf32>
  %t0 = exec.dispatch @kernels::@k_scale(%w, %c) -> (%w_new) : (memref<4x8xf32>, memref<f32>) -> (memref<4x8xf32>)
}
module @kernels {
  func.func @k_scale(%x: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
    %y = tg.mul %x, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// A fused elementwise kernel (an AdamW-like update: the weight and its moment
// from themselves and a gradient) reads each state at the index it writes:
// both new values are written over the old ones. A multi-op kernel that is
// not one elementwise loop (a softmax, then a mul) may not: its first op
// could overwrite what its second reads, so that new value is copied back.
// CHECK-LABEL: exec.program @fused_in_place
// CHECK:         %[[W:.+]] = exec.resource parameter "w" at 0 : memref<4x8xf32>
// CHECK:         %[[M:.+]] = exec.resource adam_m "w" at 128 : memref<4x8xf32>
// CHECK:         %[[V:.+]] = exec.resource parameter "v" at 256 : memref<4x8xf32>
// CHECK:         exec.resource scratch updates(%[[W]] : memref<4x8xf32>) at 0 :
// CHECK:         exec.resource scratch updates(%[[M]] : memref<4x8xf32>) at 128 :
// CHECK:         %[[VN:.+]] = exec.resource scratch updates(%[[V]] : memref<4x8xf32>) at 512 :
// CHECK:         exec.copy %[[VN]] -> %[[V]]
exec.program @fused_in_place attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %m = exec.resource adam_m "w" : memref<4x8xf32>
  %v = exec.resource parameter "v" : memref<4x8xf32>
  %g = exec.resource input "g" : memref<4x8xf32>
  %w_new = exec.resource scratch updates(%w : memref<4x8xf32>) : memref<4x8xf32>
  %m_new = exec.resource scratch updates(%m : memref<4x8xf32>) : memref<4x8xf32>
  %t0 = exec.dispatch @kernels::@k_update(%w, %m, %g) -> (%w_new, %m_new) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>)
  %v_new = exec.resource scratch updates(%v : memref<4x8xf32>) : memref<4x8xf32>
  %t1 = exec.dispatch @kernels::@k_rows(%v) -> (%v_new) : (memref<4x8xf32>) -> (memref<4x8xf32>)
}
module @kernels {
  func.func @k_update(%w: tensor<4x8xf32>, %m: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %beta = tg.constant dense<0.9> : tensor<f32>
    %0 = tg.mul %m, %beta : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %1 = tg.add %0, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %2 = tg.sub %w, %1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    return %2, %1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.func @k_rows(%v: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = tg.softmax %v : tensor<4x8xf32>
    %1 = tg.mul %0, %v : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
}

// -----

// Copy-back: the old weight is still read after the new one is written
// (t1), so the new value gets its own state slot [128, 256) and is copied
// over the old one at the end, once every command touching either is done.
// CHECK-LABEL: exec.program @copy_back
// CHECK-SAME:    arena_size = 384 : i64
// CHECK-SAME:    state_size = 256 : i64
// CHECK:         %[[W:.+]] = exec.resource parameter "w" at 0 : memref<4x8xf32>
// CHECK:         %[[WN:.+]] = exec.resource scratch updates(%[[W]] : memref<4x8xf32>) at 128 : memref<4x8xf32>
// CHECK:         exec.resource scratch at 256 : memref<4x8xf32>
// CHECK:         %[[T0:.+]] = exec.dispatch @kernels::@k_neg
// CHECK:         %[[T1:.+]] = exec.dispatch @kernels::@k_neg
// CHECK:         exec.copy %[[WN]] -> %[[W]] await(%[[T0]], %[[T1]]) : memref<4x8xf32> -> memref<4x8xf32>
exec.program @copy_back attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %w = exec.resource parameter "w" : memref<4x8xf32>
  %w_new = exec.resource scratch updates(%w : memref<4x8xf32>) : memref<4x8xf32>
  %y = exec.resource scratch : memref<4x8xf32>
  %t0 = exec.dispatch @kernels::@k_neg(%w) -> (%w_new) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t1 = exec.dispatch @kernels::@k_neg(%w) -> (%y) : (memref<4x8xf32>) -> (memref<4x8xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %y = tg.neg %x : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// Packs (exec-fuse-horizontal): the planner places the pack, and each member
// lives in it at its element offset. The parameters' pack is state, placed
// first; the scratch pack after it. A member's new value written by a
// command of its own goes where that member lives in the pack (row 1, byte
// 128 + 64), not where the pack starts; that a command after it reads
// another member (a) does not keep it from being written in place.
// CHECK-LABEL: exec.program @packs
// CHECK-SAME:    arena_size = 448 : i64
// CHECK-SAME:    state_size = 320 : i64
// CHECK:         %[[P:.+]] = exec.resource parameter at 128 : memref<2x16xf32>
// CHECK:         %[[G:.+]] = exec.resource scratch at 320 : memref<2x16xf32>
// CHECK:         exec.resource parameter "a" in %[[P]][0] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
// CHECK:         %[[B:.+]] = exec.resource parameter "b" in %[[P]][16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
// CHECK:         exec.resource scratch updates(%[[B]] : memref<16xf32>) at 192 : memref<16xf32>
// CHECK-NOT:     exec.copy
exec.program @packs attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %x = exec.resource input "x" : memref<2x16xf32>
  %p = exec.resource parameter : memref<2x16xf32>
  %g = exec.resource scratch : memref<2x16xf32>
  %a = exec.resource parameter "a" in %p[0] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  %b = exec.resource parameter "b" in %p[16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  %t0 = exec.dispatch @kernels::@k_neg2(%x) -> (%g) : (memref<2x16xf32>) -> (memref<2x16xf32>)
  %gb = exec.resource scratch in %g[16] : memref<2x16xf32> : memref<16xf32>
  %b_new = exec.resource scratch updates(%b : memref<16xf32>) : memref<16xf32>
  %t1 = exec.dispatch @kernels::@k_sub(%b, %gb) -> (%b_new) : (memref<16xf32>, memref<16xf32>) -> (memref<16xf32>)
  %y = exec.resource output "y" : memref<16xf32>
  %t2 = exec.dispatch @kernels::@k_sub(%a, %gb) -> (%y) : (memref<16xf32>, memref<16xf32>) -> (memref<16xf32>)
}
module @kernels {
  func.func @k_neg2(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
    %y = tg.neg %x : tensor<2x16xf32>
    return %y : tensor<2x16xf32>
  }
  func.func @k_sub(%w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<16xf32> {
    %y = tg.sub %w, %g : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %y : tensor<16xf32>
  }
}

// -----

// A member's new value written in place on another stream (as a ZeRO-1
// all-gather writes a new parameter on 1) awaits the earlier commands on
// its bytes (t0), not the pack's later ones on another member (t2), which
// it could not await.
// CHECK-LABEL: exec.program @pack_member_on_another_stream
// CHECK:         %[[T0:.+]] = exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) :
// CHECK:         exec.resource scratch updates(%{{.+}} : memref<16xf32>) at 64 : memref<16xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T0]]) on 1 :
// CHECK-NEXT:    exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) :
// CHECK-NOT:     exec.copy
exec.program @pack_member_on_another_stream attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %p = exec.resource parameter : memref<2x16xf32>
  %x = exec.resource input "x" : memref<16xf32>
  %y = exec.resource output "y" : memref<16xf32>
  %z = exec.resource output "z" : memref<16xf32>
  %a = exec.resource parameter "a" in %p[0] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  %b = exec.resource parameter "b" in %p[16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
  %t0 = exec.dispatch @kernels::@k_neg(%b) -> (%y) : (memref<16xf32>) -> (memref<16xf32>)
  %b_new = exec.resource scratch updates(%b : memref<16xf32>) : memref<16xf32>
  %t1 = exec.dispatch @kernels::@k_neg(%x) -> (%b_new) on 1 : (memref<16xf32>) -> (memref<16xf32>)
  %t2 = exec.dispatch @kernels::@k_neg(%a) -> (%z) : (memref<16xf32>) -> (memref<16xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<16xf32>) -> tensor<16xf32> {
    %y = tg.neg %x : tensor<16xf32>
    return %y : tensor<16xf32>
  }
}

// -----

// Two streams: %b reuses %a's bytes [256, 384), but its writer t2 runs on
// stream 1 while %a's writer and reader (t0, t1) ran on stream 0, so t2
// must await both; the stream order alone would not keep them apart.
// CHECK-LABEL: exec.program @streams
// CHECK:         exec.resource scratch at 256 : memref<4x8xf32>
// CHECK:         exec.resource scratch at 256 : memref<4x8xf32>
// CHECK:         %[[T0:.+]] = exec.dispatch @kernels::@k_neg
// CHECK:         %[[T1:.+]] = exec.dispatch @kernels::@k_neg
// CHECK:         exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%{{.+}}) await(%[[T0]], %[[T1]]) on 1
exec.program @streams attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>} {
  %x = exec.resource input "x" : memref<4x8xf32>
  %o = exec.resource output "o" : memref<4x8xf32>
  %a = exec.resource scratch : memref<4x8xf32>
  %b = exec.resource scratch : memref<4x8xf32>
  %t0 = exec.dispatch @kernels::@k_neg(%x) -> (%a) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t1 = exec.dispatch @kernels::@k_neg(%a) -> (%o) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t2 = exec.dispatch @kernels::@k_neg(%x) -> (%b) on 1 : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t3 = exec.dispatch @kernels::@k_neg(%b) -> (%o) await(%t2) on 1 : (memref<4x8xf32>) -> (memref<4x8xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %y = tg.neg %x : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// A collective on the communication stream (1) reads %g and writes %h while
// stream 0 goes on. %g's last use is the collective, but its bytes are not
// free until a command awaits the collective (t3): %d, written before that,
// gets bytes of its own instead of making t2 wait for the collective. %e,
// after t3, reuses %g's and %h's bytes and awaits the collective itself.
// CHECK-LABEL: exec.program @collective
// CHECK:         %[[G:.+]] = exec.resource scratch at 256 : memref<4x8xf32>
// CHECK-NEXT:    %[[H:.+]] = exec.resource scratch at 384 : memref<4x8xf32>
// CHECK-NEXT:    %[[D:.+]] = exec.resource scratch at 512 : memref<4x8xf32>
// CHECK-NEXT:    %[[E:.+]] = exec.resource scratch at 256 : memref<4x8xf32>
// CHECK-NEXT:    %[[T0:.+]] = exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%[[G]]) :
// CHECK-NEXT:    %[[T1:.+]] = exec.all_reduce sum %[[G]] -> %[[H]] over "data" await(%[[T0]]) on 1
// CHECK-NEXT:    exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%[[D]]) :
// CHECK-NEXT:    exec.dispatch @kernels::@k_neg(%[[H]]) -> (%{{.+}}) await(%[[T1]]) :
// CHECK-NEXT:    exec.dispatch @kernels::@k_neg(%{{.+}}) -> (%[[E]]) await(%[[T1]]) :
exec.program @collective attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>} {
  %x = exec.resource input "x" : memref<4x8xf32>
  %o = exec.resource output "o" : memref<4x8xf32>
  %g = exec.resource scratch : memref<4x8xf32>
  %h = exec.resource scratch : memref<4x8xf32>
  %d = exec.resource scratch : memref<4x8xf32>
  %e = exec.resource scratch : memref<4x8xf32>
  %t0 = exec.dispatch @kernels::@k_neg(%x) -> (%g) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t1 = exec.all_reduce sum %g -> %h over "data" await(%t0) on 1 : memref<4x8xf32> -> memref<4x8xf32>
  %t2 = exec.dispatch @kernels::@k_neg(%x) -> (%d) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t3 = exec.dispatch @kernels::@k_neg(%h) -> (%o) await(%t1) : (memref<4x8xf32>) -> (memref<4x8xf32>)
  %t4 = exec.dispatch @kernels::@k_neg(%x) -> (%e) : (memref<4x8xf32>) -> (memref<4x8xf32>)
}
module @kernels {
  func.func @k_neg(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %y = tg.neg %x : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// Planning twice is a mistake.
// expected-error @+1 {{'exec.program' op is already planned}}
exec.program @twice attributes {batch_size = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64, seed = 0 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, arena_size = 0 : i64} {
}
