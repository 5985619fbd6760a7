// RUN: tg-opt %s --split-input-file --exec-fuse-horizontal="remarks=true" 2>%t.remarks | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
// RUN: tg-opt %s --split-input-file --exec-fuse-horizontal="max-elements=4" | FileCheck %s --check-prefix=LARGE
// RUN: tg-opt %s --split-input-file --exec-fuse-horizontal="max-elements=100000" | FileCheck %s --check-prefix=ROWS
// With large-rows, buffers over max-elements pack where a trial plan of the
// lowering that follows keeps the arena (the decision, with both arenas, a
// remark on the module).
// RUN: tg-opt %s --split-input-file --exec-fuse-horizontal="max-elements=4 large-rows=true remarks=true" 2>%t.large | FileCheck %s --check-prefix=LARGEROWS
// RUN: FileCheck %s --check-prefix=LARGEROWS-REMARK < %t.large

// Two parameters' gradient square sums and AdamW-like updates (a shared
// learning rate): one dispatch of each kernel, batched over 2 rows. The
// gradients, parameters and new values become rows of packs, the members
// keeping their names; the new values' pack updates the parameters' pack.
// The square sums are a row reduction of the batched kernel, one sum a row.
// REMARK: remark: fused horizontally: 2 dispatches of k1_square_sum in one, over packs of 2 rows
// REMARK: remark: fused horizontally: 2 dispatches of k2_update in one, over packs of 2 rows
// CHECK-LABEL: exec.program @adamw
// CHECK-NEXT:  %[[G:[0-9]+]] = exec.resource scratch : memref<2x16xf32>
// CHECK-NEXT:  %[[S:[0-9]+]] = exec.resource scratch : memref<2xf32>
// CHECK-NEXT:  %[[P:[0-9]+]] = exec.resource parameter : memref<2x16xf32>
// CHECK-NEXT:  %[[N:[0-9]+]] = exec.resource scratch updates(%[[P]] : memref<2x16xf32>) : memref<2x16xf32>
// CHECK:       exec.resource parameter "a" in %[[P]][0] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
// CHECK-NEXT:  exec.resource parameter "b" in %[[P]][16] : memref<2x16xf32> {init = #tg.init<zeros>} : memref<16xf32>
// CHECK-NEXT:  %[[GA:[0-9]+]] = exec.resource scratch in %[[G]][0] : memref<2x16xf32> : memref<16xf32>
// CHECK-NEXT:  %[[GB:[0-9]+]] = exec.resource scratch in %[[G]][16] : memref<2x16xf32> : memref<16xf32>
// CHECK-NEXT:  exec.dispatch @kernels::@k0_make(%{{[0-9]+}}, %{{[0-9]+}}) -> (%[[GA]])
// CHECK-NEXT:  exec.dispatch @kernels::@k0_make(%{{[0-9]+}}, %{{[0-9]+}}) -> (%[[GB]])
// CHECK-NEXT:  %[[SA:[0-9]+]] = exec.resource scratch in %[[S]][0] : memref<2xf32> : memref<f32>
// CHECK-NEXT:  %[[SB:[0-9]+]] = exec.resource scratch in %[[S]][1] : memref<2xf32> : memref<f32>
// CHECK-NEXT:  exec.dispatch @kernels::@k1_square_sum_x2(%[[G]]) -> (%[[S]]) : (memref<2x16xf32>) -> memref<2xf32>
// CHECK-NEXT:  exec.resource output "norm"
// CHECK-NEXT:  exec.dispatch @kernels::@k3_total(%[[SA]], %[[SB]])
// CHECK-NEXT:  exec.resource scratch in %[[N]][0] : memref<2x16xf32> : memref<16xf32>
// CHECK-NEXT:  exec.resource scratch in %[[N]][16] : memref<2x16xf32> : memref<16xf32>
// CHECK-NEXT:  exec.dispatch @kernels::@k2_update_x2(%[[G]], %{{[0-9]+}}, %[[P]]) -> (%[[N]]) : (memref<2x16xf32>, memref<f32>, memref<2x16xf32>) -> memref<2x16xf32>
// CHECK-NEXT:  }
// CHECK-LABEL: module @kernels
// CHECK-NOT:   func.func @k1_square_sum(
// CHECK:       func.func @k1_square_sum_x2(%{{.*}}: tensor<2x16xf32>) -> tensor<2xf32>
// CHECK-NEXT:    tg.mul %{{.*}} : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT:    tg.reduce_sum %{{.*}} [1] : tensor<2x16xf32> -> tensor<2xf32>
// CHECK:       func.func @k2_update_x2(%{{.*}}: tensor<2x16xf32>, %{{.*}}: tensor<f32>, %{{.*}}: tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT:    tg.mul %{{.*}} : tensor<2x16xf32>, tensor<f32> -> tensor<2x16xf32>
// CHECK-NEXT:    tg.sub %{{.*}} : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
// CHECK-NOT:   func.func @k2_update(

// Buffers of 16 elements are over max-elements=4: nothing changes. With
// large-rows they pack, the arena planned smaller (the packed sums read the
// gradients where the first one did).
// LARGE-LABEL: exec.program @adamw
// LARGE-COUNT-2: exec.dispatch @kernels::@k1_square_sum(
// LARGE-COUNT-2: exec.dispatch @kernels::@k2_update(
// LARGEROWS-REMARK: remark: fused horizontally with rows of more than 4 elements: 2 dispatches fewer, the programs' arenas 576 bytes without them and 512 with
// LARGEROWS-LABEL: exec.program @adamw
// LARGEROWS: exec.dispatch @kernels::@k1_square_sum_x2(
// LARGEROWS: exec.dispatch @kernels::@k2_update_x2(
exec.program @adamw attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<16xf32>
  %lr = exec.resource input "lr" : memref<f32>
  %a = exec.resource parameter "a" {init = #tg.init<zeros>} : memref<16xf32>
  %b = exec.resource parameter "b" {init = #tg.init<zeros>} : memref<16xf32>
  %ga = exec.resource scratch : memref<16xf32>
  %gb = exec.resource scratch : memref<16xf32>
  %t0 = exec.dispatch @kernels::@k0_make(%x, %a) -> (%ga) : (memref<16xf32>, memref<16xf32>) -> memref<16xf32>
  %t1 = exec.dispatch @kernels::@k0_make(%x, %b) -> (%gb) : (memref<16xf32>, memref<16xf32>) -> memref<16xf32>
  %sa = exec.resource scratch : memref<f32>
  %sb = exec.resource scratch : memref<f32>
  %t2 = exec.dispatch @kernels::@k1_square_sum(%ga) -> (%sa) : (memref<16xf32>) -> memref<f32>
  %t3 = exec.dispatch @kernels::@k1_square_sum(%gb) -> (%sb) : (memref<16xf32>) -> memref<f32>
  %norm = exec.resource output "norm" : memref<f32>
  %t4 = exec.dispatch @kernels::@k3_total(%sa, %sb) -> (%norm) : (memref<f32>, memref<f32>) -> memref<f32>
  %na = exec.resource scratch updates(%a : memref<16xf32>) : memref<16xf32>
  %nb = exec.resource scratch updates(%b : memref<16xf32>) : memref<16xf32>
  %t5 = exec.dispatch @kernels::@k2_update(%ga, %lr, %a) -> (%na) : (memref<16xf32>, memref<f32>, memref<16xf32>) -> memref<16xf32>
  %t6 = exec.dispatch @kernels::@k2_update(%gb, %lr, %b) -> (%nb) : (memref<16xf32>, memref<f32>, memref<16xf32>) -> memref<16xf32>
}
module @kernels {
  func.func @k0_make(%arg0: tensor<16xf32>, %arg1: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func @k1_square_sum(%arg0: tensor<16xf32>) -> tensor<f32> {
    %0 = tg.mul %arg0, %arg0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %1 = tg.reduce_sum %0 [0] : tensor<16xf32> -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @k2_update(%arg0: tensor<16xf32>, %arg1: tensor<f32>, %arg2: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.mul %arg0, %arg1 : tensor<16xf32>, tensor<f32> -> tensor<16xf32>
    %1 = tg.sub %arg2, %0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %1 : tensor<16xf32>
  }
  func.func @k3_total(%arg0: tensor<f32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = tg.add %arg0, %arg1 : tensor<f32>, tensor<f32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// Updates that also write each parameter's bf16 compute copy, state no
// member reads (the forward reads it): the group packs the copies too (a bf16 row of
// 32 elements keeps the next one 64-byte aligned), and
// the new copies' pack updates theirs. A forward reader of a copy keeps
// reading its member.
// REMARK: remark: fused horizontally: 2 dispatches of k0_update in one, over packs of 2 rows
// CHECK-LABEL: exec.program @compute_copies
// CHECK-NEXT:  %[[P:[0-9]+]] = exec.resource parameter : memref<2x32xf32>
// CHECK-NEXT:  %[[N:[0-9]+]] = exec.resource scratch updates(%[[P]] : memref<2x32xf32>) : memref<2x32xf32>
// CHECK-NEXT:  %[[C:[0-9]+]] = exec.resource compute_copy : memref<2x32xbf16>
// CHECK-NEXT:  %[[NC:[0-9]+]] = exec.resource scratch updates(%[[C]] : memref<2x32xbf16>) : memref<2x32xbf16>
// CHECK:       %[[CA:[0-9]+]] = exec.resource compute_copy "a" in %[[C]][0] : memref<2x32xbf16> : memref<32xbf16>
// CHECK:       exec.dispatch @kernels::@k1_read(%[[CA]])
// CHECK:       exec.dispatch @kernels::@k0_update_x2(%{{[0-9]+}}, %[[P]]) -> (%[[N]], %[[NC]])
exec.program @compute_copies attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %lr = exec.resource input "lr" : memref<f32>
  %a = exec.resource parameter "a" {init = #tg.init<zeros>} : memref<32xf32>
  %b = exec.resource parameter "b" {init = #tg.init<zeros>} : memref<32xf32>
  %ca = exec.resource compute_copy "a" : memref<32xbf16>
  %cb = exec.resource compute_copy "b" : memref<32xbf16>
  %y = exec.resource output "y" : memref<32xbf16>
  %t0 = exec.dispatch @kernels::@k1_read(%ca) -> (%y) : (memref<32xbf16>) -> memref<32xbf16>
  %na = exec.resource scratch updates(%a : memref<32xf32>) : memref<32xf32>
  %nca = exec.resource scratch updates(%ca : memref<32xbf16>) : memref<32xbf16>
  %nb = exec.resource scratch updates(%b : memref<32xf32>) : memref<32xf32>
  %ncb = exec.resource scratch updates(%cb : memref<32xbf16>) : memref<32xbf16>
  %t1 = exec.dispatch @kernels::@k0_update(%lr, %a) -> (%na, %nca) : (memref<f32>, memref<32xf32>) -> (memref<32xf32>, memref<32xbf16>)
  %t2 = exec.dispatch @kernels::@k0_update(%lr, %b) -> (%nb, %ncb) : (memref<f32>, memref<32xf32>) -> (memref<32xf32>, memref<32xbf16>)
}
module @kernels {
  func.func @k0_update(%arg0: tensor<f32>, %arg1: tensor<32xf32>) -> (tensor<32xf32>, tensor<32xbf16>) {
    %0 = tg.mul %arg1, %arg0 : tensor<32xf32>, tensor<f32> -> tensor<32xf32>
    %1 = tg.cast %0 : tensor<32xf32> -> tensor<32xbf16>
    return %0, %1 : tensor<32xf32>, tensor<32xbf16>
  }
  func.func @k1_read(%arg0: tensor<32xbf16>) -> tensor<32xbf16> {
    %0 = tg.neg %arg0 : tensor<32xbf16>
    return %0 : tensor<32xbf16>
  }
}

// -----

// What must not fuse: the second dispatch reads what the first writes (a
// chain); a command between the two writes what the second reads (it
// cannot run where the first ran); different shared operands (two learning
// rates); a kernel whose body a leading dimension does not batch (a
// transpose). Each stays one dispatch of its kernel.
// CHECK-LABEL: exec.program @apart
// CHECK-COUNT-2: exec.dispatch @kernels::@k0_scale(
// CHECK:       exec.dispatch @kernels::@k2_square(
// CHECK:       exec.dispatch @kernels::@k1_make(
// CHECK:       exec.dispatch @kernels::@k2_square(
// CHECK-COUNT-2: exec.dispatch @kernels::@k0_scale(
// CHECK-COUNT-2: exec.dispatch @kernels::@k3_transpose(
// CHECK-NOT:   _x2
exec.program @apart attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<16xf32>
  %lr = exec.resource input "lr" : memref<f32>
  %lr2 = exec.resource input "lr2" : memref<f32>
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<16xf32>
  %t0 = exec.dispatch @kernels::@k0_scale(%x, %lr) -> (%a) : (memref<16xf32>, memref<f32>) -> memref<16xf32>
  %t1 = exec.dispatch @kernels::@k0_scale(%a, %lr) -> (%b) : (memref<16xf32>, memref<f32>) -> memref<16xf32>
  %c = exec.resource scratch : memref<16xf32>
  %d = exec.resource scratch : memref<16xf32>
  %sc = exec.resource scratch : memref<16xf32>
  %sd = exec.resource scratch : memref<16xf32>
  %t2 = exec.dispatch @kernels::@k2_square(%x) -> (%sc) : (memref<16xf32>) -> memref<16xf32>
  %t3 = exec.dispatch @kernels::@k1_make(%x) -> (%d) : (memref<16xf32>) -> memref<16xf32>
  %t4 = exec.dispatch @kernels::@k2_square(%d) -> (%sd) : (memref<16xf32>) -> memref<16xf32>
  %e = exec.resource scratch : memref<16xf32>
  %f = exec.resource scratch : memref<16xf32>
  %t5 = exec.dispatch @kernels::@k0_scale(%sc, %lr) -> (%e) : (memref<16xf32>, memref<f32>) -> memref<16xf32>
  %t6 = exec.dispatch @kernels::@k0_scale(%sd, %lr2) -> (%f) : (memref<16xf32>, memref<f32>) -> memref<16xf32>
  %y = exec.resource output "y" : memref<16xf32>
  %z = exec.resource output "z" : memref<16xf32>
  %t7 = exec.dispatch @kernels::@k3_transpose(%b) -> (%y) : (memref<16xf32>) -> memref<16xf32>
  %t8 = exec.dispatch @kernels::@k3_transpose(%c) -> (%z) : (memref<16xf32>) -> memref<16xf32>
}
module @kernels {
  func.func @k0_scale(%arg0: tensor<16xf32>, %arg1: tensor<f32>) -> tensor<16xf32> {
    %0 = tg.mul %arg0, %arg1 : tensor<16xf32>, tensor<f32> -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func @k1_make(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.neg %arg0 : tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func @k2_square(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.mul %arg0, %arg0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func @k3_transpose(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.reshape %arg0 : tensor<16xf32> -> tensor<4x4xf32>
    %1 = tg.transpose %0 [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
    %2 = tg.reshape %1 : tensor<4x4xf32> -> tensor<16xf32>
    return %2 : tensor<16xf32>
  }
}

// -----

// Groups refused, each with its reason: buffers that are parts of others
// (slices of larger ones), rows that would leave the next one unaligned
// (3 floats), and gradients of which one is all-reduced (the pack could
// not be reduced as one).
// REMARK-NOT: remark: fused horizontally
// REMARK: remark: not fused horizontally with the 1 other dispatches of k0_neg: operand 0: a buffer is a part of another
// REMARK: remark: not fused horizontally with the 1 other dispatches of k1_neg3: operand 0: a row of 12 bytes would leave the next unaligned
// REMARK: remark: not fused horizontally with the 1 other dispatches of k0_neg: operand 0: some of its buffers are all-reduced, others not
// CHECK-LABEL: exec.program @refused
// CHECK-NOT: _x2
exec.program @refused attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<32xf32>
  %w = exec.resource input "w" : memref<32xf32>
  %x0 = exec.view %x[16] : memref<32xf32> to memref<16xf32>
  %x1 = exec.view %w[16] : memref<32xf32> to memref<16xf32>
  %a = exec.resource scratch : memref<16xf32>
  %b = exec.resource scratch : memref<16xf32>
  %t0 = exec.dispatch @kernels::@k0_neg(%x0) -> (%a) : (memref<16xf32>) -> memref<16xf32>
  %t1 = exec.dispatch @kernels::@k0_neg(%x1) -> (%b) : (memref<16xf32>) -> memref<16xf32>
  %u = exec.resource input "u" : memref<3xf32>
  %v = exec.resource input "v" : memref<3xf32>
  %c = exec.resource scratch : memref<3xf32>
  %d = exec.resource scratch : memref<3xf32>
  %t2 = exec.dispatch @kernels::@k1_neg3(%u) -> (%c) : (memref<3xf32>) -> memref<3xf32>
  %t3 = exec.dispatch @kernels::@k1_neg3(%v) -> (%d) : (memref<3xf32>) -> memref<3xf32>
  %t4 = exec.all_reduce sum %a -> %a over "data" : memref<16xf32> -> memref<16xf32>
  %e = exec.resource scratch : memref<16xf32>
  %f = exec.resource scratch : memref<16xf32>
  %t5 = exec.dispatch @kernels::@k0_neg(%a) -> (%e) : (memref<16xf32>) -> memref<16xf32>
  %t6 = exec.dispatch @kernels::@k0_neg(%b) -> (%f) : (memref<16xf32>) -> memref<16xf32>
}
module @kernels {
  func.func @k0_neg(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %0 = tg.neg %arg0 : tensor<16xf32>
    return %0 : tensor<16xf32>
  }
  func.func @k1_neg3(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = tg.neg %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}

// -----

// Data-parallel gradients, each all-reduced in place, with only all-reduces
// between the first and the last of those: packed, their all-reduces become
// one of the pack where the last was (which a gradient bucket then takes
// as one gradient). A reduction over a negative axis keeps it: -1 is the
// last dimension with the leading one too.
// REMARK: remark: fused horizontally: 2 dispatches of k1_rows in one, over packs of 2 rows
// CHECK-LABEL: exec.program @reduced
// CHECK:       %[[G:[0-9]+]] = exec.resource scratch : memref<2x16x16xf32>
// CHECK:       exec.dispatch @kernels::@k0_make
// CHECK-NEXT:  exec.dispatch @kernels::@k0_make
// CHECK-NEXT:  exec.all_reduce avg %{{[0-9]+}} -> %{{[0-9]+}} over "data" : memref<256xf32> -> memref<256xf32>
// CHECK-NEXT:  exec.all_reduce avg %[[G]] -> %[[G]] over "data" : memref<2x16x16xf32> -> memref<2x16x16xf32>
// CHECK:       exec.dispatch @kernels::@k1_rows_x2(%[[G]])
// CHECK-NOT:   exec.all_reduce
// CHECK:       func.func @k1_rows_x2(%{{.*}}: tensor<2x16x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT:    tg.reduce_sum %{{.*}} [-1] : tensor<2x16x16xf32> -> tensor<2x16xf32>
exec.program @reduced attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 2>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<16x16xf32>
  %y = exec.resource input "y" : memref<16x16xf32>
  %o = exec.resource scratch : memref<256xf32>
  %a = exec.resource scratch : memref<16x16xf32>
  %b = exec.resource scratch : memref<16x16xf32>
  %t0 = exec.dispatch @kernels::@k0_make(%x) -> (%a) : (memref<16x16xf32>) -> memref<16x16xf32>
  %t1 = exec.dispatch @kernels::@k0_make(%y) -> (%b) : (memref<16x16xf32>) -> memref<16x16xf32>
  %t2 = exec.all_reduce avg %a -> %a over "data" : memref<16x16xf32> -> memref<16x16xf32>
  %t3 = exec.all_reduce avg %o -> %o over "data" : memref<256xf32> -> memref<256xf32>
  %t4 = exec.all_reduce avg %b -> %b over "data" : memref<16x16xf32> -> memref<16x16xf32>
  %sa = exec.resource scratch : memref<16xf32>
  %sb = exec.resource scratch : memref<16xf32>
  %t5 = exec.dispatch @kernels::@k1_rows(%a) -> (%sa) : (memref<16x16xf32>) -> memref<16xf32>
  %t6 = exec.dispatch @kernels::@k1_rows(%b) -> (%sb) : (memref<16x16xf32>) -> memref<16xf32>
}
module @kernels {
  func.func @k0_make(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {
    %0 = tg.neg %arg0 : tensor<16x16xf32>
    return %0 : tensor<16x16xf32>
  }
  func.func @k1_rows(%arg0: tensor<16x16xf32>) -> tensor<16xf32> {
    %0 = tg.reduce_sum %arg0 [-1] : tensor<16x16xf32> -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}

// -----

// Long rows: with members of up to 100,000 elements allowed, the elementwise
// kernel over 69,632-element buffers batches, but their sums do not: a
// batched sum is one row a member, which a GPU gives one team, so a
// reduction batches only up to 65,536 elements a result.
// ROWS-LABEL: exec.program @long_rows
// ROWS:       exec.dispatch @kernels::@k0_neg_x2(
// ROWS-COUNT-2: exec.dispatch @kernels::@k1_sum(
// With large-rows the long sums could batch too, but packing the four
// buffers, whose lifetimes are staggered, would make the arena larger: they
// stay apart.
// LARGEROWS-REMARK: remark: not fused horizontally with rows of more than 4 elements: 2 dispatches fewer, the programs' arenas 835584 bytes without them and 1114112 with
// LARGEROWS-LABEL: exec.program @long_rows
// LARGEROWS-COUNT-2: exec.dispatch @kernels::@k0_neg(
// LARGEROWS-COUNT-2: exec.dispatch @kernels::@k1_sum(
exec.program @long_rows attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %a = exec.resource scratch : memref<69632xf32>
  %b = exec.resource scratch : memref<69632xf32>
  %c = exec.resource scratch : memref<69632xf32>
  %d = exec.resource scratch : memref<69632xf32>
  %t0 = exec.dispatch @kernels::@k0_neg(%a) -> (%c) : (memref<69632xf32>) -> memref<69632xf32>
  %t1 = exec.dispatch @kernels::@k0_neg(%b) -> (%d) : (memref<69632xf32>) -> memref<69632xf32>
  %sa = exec.resource scratch : memref<f32>
  %sb = exec.resource scratch : memref<f32>
  %t2 = exec.dispatch @kernels::@k1_sum(%c) -> (%sa) : (memref<69632xf32>) -> memref<f32>
  %t3 = exec.dispatch @kernels::@k1_sum(%d) -> (%sb) : (memref<69632xf32>) -> memref<f32>
}
module @kernels {
  func.func @k0_neg(%arg0: tensor<69632xf32>) -> tensor<69632xf32> {
    %0 = tg.neg %arg0 : tensor<69632xf32>
    return %0 : tensor<69632xf32>
  }
  func.func @k1_sum(%arg0: tensor<69632xf32>) -> tensor<f32> {
    %0 = tg.reduce_sum %arg0 [0] : tensor<69632xf32> -> tensor<f32>
    return %0 : tensor<f32>
  }
}
