// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-layouts | FileCheck %s
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-layouts=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Attention's forward: q and k are sliced out of the fused projection and
// split into heads (a transpose) before their product; the heads' output is
// merged back (a transpose) before the output projection. The products read
// q and k where the projection wrote them (lda 12, heads 2 elements apart,
// batch rows 48) and write the merged output in place (ldc 4): no slice,
// no transpose, no kernel left.
// CHECK-LABEL: exec.program @heads
// REMARK: remark: GEMM's product written, as strides, where the transpose after it put it
// REMARK: remark: GEMM's a read, as strides, where the slice and the transpose before it read it
// REMARK: remark: GEMM's b read, as strides, where the slice and the transpose before it read it
// CHECK: %[[QKV:.*]] = exec.resource input "qkv" : memref<2x4x12xf32>
// CHECK: %[[S:.*]] = exec.resource output "scores"
// CHECK: %[[Q:.*]] = exec.view %[[QKV]][0] : memref<2x4x12xf32> to memref<88xf32>
// CHECK: %[[K:.*]] = exec.view %[[QKV]][4] : memref<2x4x12xf32> to memref<88xf32>
// CHECK: exec.gemm(%[[Q]], %[[K]]) -> %[[S]] {batch = 4 : i64, inner_batch = 2 : i64, inner_stride_a = 2 : i64, inner_stride_b = 2 : i64, inner_stride_c = 16 : i64, k = 2 : i64, lda = 12 : i64, ldb = 12 : i64, m = 4 : i64, n = 4 : i64, stride_a = 48 : i64, stride_b = 48 : i64, stride_c = 32 : i64, transpose_b}
// CHECK: %[[MERGED:.*]] = exec.resource scratch : memref<2x4x2x2xf32>
// CHECK: %[[O:.*]] = exec.view %[[MERGED]][0] : memref<2x4x2x2xf32> to memref<32xf32>
// CHECK: %[[V:.*]] = exec.view %[[QKV]][4]
// CHECK: exec.gemm(%[[S]], %[[V]]) -> %[[O]] {batch = 4 : i64, inner_batch = 2 : i64, inner_stride_a = 16 : i64, inner_stride_b = 2 : i64, inner_stride_c = 2 : i64, k = 4 : i64, ldb = 12 : i64, ldc = 4 : i64, m = 4 : i64, n = 2 : i64, stride_a = 32 : i64, stride_b = 48 : i64, stride_c = 16 : i64}
// CHECK: %[[OM:.*]] = exec.view %[[MERGED]] : memref<2x4x2x2xf32> to memref<2x4x4xf32>
// CHECK: exec.gemm(%[[OM]], %{{.*}}) -> %{{.*}} {batch = 1 : i64, k = 4 : i64, m = 8 : i64, n = 4 : i64, stride_a = 32 : i64, stride_b = 0 : i64, stride_c = 32 : i64}
// CHECK-NOT: exec.dispatch
// CHECK: module @kernels
// CHECK-NOT: func.func
exec.program @heads attributes {batch_size = 2 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 4 : i64, vocab_size = 1 : i64} {
  %qkv = exec.resource input "qkv" : memref<2x4x12xf32>
  %q = exec.resource scratch : memref<2x4x4xf32>
  %t0 = exec.dispatch @kernels::@k0_slice_q(%qkv) -> (%q) : (memref<2x4x12xf32>) -> memref<2x4x4xf32>
  %qs = exec.view %q : memref<2x4x4xf32> to memref<2x4x2x2xf32>
  %qh = exec.resource scratch : memref<2x2x4x2xf32>
  %t1 = exec.dispatch @kernels::@k1_heads(%qs) -> (%qh) : (memref<2x4x2x2xf32>) -> memref<2x2x4x2xf32>
  %k = exec.resource scratch : memref<2x4x4xf32>
  %t2 = exec.dispatch @kernels::@k2_slice_k(%qkv) -> (%k) : (memref<2x4x12xf32>) -> memref<2x4x4xf32>
  %ks = exec.view %k : memref<2x4x4xf32> to memref<2x4x2x2xf32>
  %kh = exec.resource scratch : memref<2x2x4x2xf32>
  %t3 = exec.dispatch @kernels::@k1_heads(%ks) -> (%kh) : (memref<2x4x2x2xf32>) -> memref<2x2x4x2xf32>
  %s = exec.resource output "scores" : memref<2x2x4x4xf32>
  %t4 = exec.gemm(%qh, %kh) -> %s {batch = 4 : i64, k = 2 : i64, m = 4 : i64, n = 4 : i64, stride_a = 8 : i64, stride_b = 8 : i64, stride_c = 16 : i64, transpose_b} : memref<2x2x4x2xf32>, memref<2x2x4x2xf32> -> memref<2x2x4x4xf32>
  %o = exec.resource scratch : memref<2x2x4x2xf32>
  %t5 = exec.gemm(%s, %kh) -> %o {batch = 4 : i64, k = 4 : i64, m = 4 : i64, n = 2 : i64, stride_a = 16 : i64, stride_b = 8 : i64, stride_c = 8 : i64} : memref<2x2x4x4xf32>, memref<2x2x4x2xf32> -> memref<2x2x4x2xf32>
  %ot = exec.resource scratch : memref<2x4x2x2xf32>
  %t6 = exec.dispatch @kernels::@k3_tokens(%o) -> (%ot) : (memref<2x2x4x2xf32>) -> memref<2x4x2x2xf32>
  %om = exec.view %ot : memref<2x4x2x2xf32> to memref<2x4x4xf32>
  %w = exec.resource parameter "w" : memref<4x4xf32>
  %y = exec.resource output "y" : memref<2x4x4xf32>
  %t7 = exec.gemm(%om, %w) -> %y {batch = 1 : i64, k = 4 : i64, m = 8 : i64, n = 4 : i64, stride_a = 32 : i64, stride_b = 0 : i64, stride_c = 32 : i64} : memref<2x4x4xf32>, memref<4x4xf32> -> memref<2x4x4xf32>
}
module @kernels {
  func.func @k0_slice_q(%arg0: tensor<2x4x12xf32>) -> tensor<2x4x4xf32> {
    %0 = tg.slice %arg0[[0, 0, 0]] [[2, 4, 4]] : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
    return %0 : tensor<2x4x4xf32>
  }
  func.func @k1_heads(%arg0: tensor<2x4x2x2xf32>) -> tensor<2x2x4x2xf32> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x4x2x2xf32> -> tensor<2x2x4x2xf32>
    return %0 : tensor<2x2x4x2xf32>
  }
  func.func @k2_slice_k(%arg0: tensor<2x4x12xf32>) -> tensor<2x4x4xf32> {
    %0 = tg.slice %arg0[[0, 0, 4]] [[2, 4, 4]] : tensor<2x4x12xf32> -> tensor<2x4x4xf32>
    return %0 : tensor<2x4x4xf32>
  }
  func.func @k3_tokens(%arg0: tensor<2x2x4x2xf32>) -> tensor<2x4x2x2xf32> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
    return %0 : tensor<2x4x2x2xf32>
  }
}

// -----

// The backward: the gradients of q and k come out of their products, are
// merged (transposes) and concatenated into the projection's gradient. Both
// products write their slots of the concatenation (offsets 0 and 4, ldc 8).
// CHECK-LABEL: exec.program @grads
// REMARK: remark: GEMM's product written, as strides, where the transpose and the concatenation after it put it
// REMARK: remark: GEMM's product written, as strides, where the transpose and the concatenation after it put it
// CHECK: %[[DQK:.*]] = exec.resource scratch : memref<2x4x8xf32>
// CHECK: %[[DQ:.*]] = exec.view %[[DQK]][0] : memref<2x4x8xf32> to memref<60xf32>
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[DQ]] {{{.*}}inner_stride_c = 2 : i64{{.*}}ldc = 8 : i64{{.*}}stride_c = 32 : i64}
// CHECK: %[[DK:.*]] = exec.view %[[DQK]][4] : memref<2x4x8xf32> to memref<60xf32>
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %[[DK]] {{{.*}}ldc = 8 : i64{{.*}}transpose_a}
// CHECK-NEXT: %[[OUT:.*]] = exec.resource output "dqk"
// CHECK-NEXT: exec.copy %[[DQK]] -> %[[OUT]]
exec.program @grads attributes {batch_size = 2 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 4 : i64, vocab_size = 1 : i64} {
  %p = exec.resource input "p" : memref<2x2x4x4xf32>
  %x = exec.resource input "x" : memref<2x2x4x2xf32>
  %dq = exec.resource scratch : memref<2x2x4x2xf32>
  %t0 = exec.gemm(%p, %x) -> %dq {batch = 4 : i64, k = 4 : i64, m = 4 : i64, n = 2 : i64, stride_a = 16 : i64, stride_b = 8 : i64, stride_c = 8 : i64} : memref<2x2x4x4xf32>, memref<2x2x4x2xf32> -> memref<2x2x4x2xf32>
  %dk = exec.resource scratch : memref<2x2x4x2xf32>
  %t1 = exec.gemm(%p, %x) -> %dk {batch = 4 : i64, k = 4 : i64, m = 4 : i64, n = 2 : i64, stride_a = 16 : i64, stride_b = 8 : i64, stride_c = 8 : i64, transpose_a} : memref<2x2x4x4xf32>, memref<2x2x4x2xf32> -> memref<2x2x4x2xf32>
  %dqt = exec.resource scratch : memref<2x4x2x2xf32>
  %t2 = exec.dispatch @kernels::@k3_tokens(%dq) -> (%dqt) : (memref<2x2x4x2xf32>) -> memref<2x4x2x2xf32>
  %dkt = exec.resource scratch : memref<2x4x2x2xf32>
  %t3 = exec.dispatch @kernels::@k3_tokens(%dk) -> (%dkt) : (memref<2x2x4x2xf32>) -> memref<2x4x2x2xf32>
  %dqm = exec.view %dqt : memref<2x4x2x2xf32> to memref<2x4x4xf32>
  %dkm = exec.view %dkt : memref<2x4x2x2xf32> to memref<2x4x4xf32>
  %dqk = exec.resource scratch : memref<2x4x8xf32>
  %t4 = exec.dispatch @kernels::@k4_concat(%dqm, %dkm) -> (%dqk) : (memref<2x4x4xf32>, memref<2x4x4xf32>) -> memref<2x4x8xf32>
  %out = exec.resource output "dqk" : memref<2x4x8xf32>
  %t5 = exec.copy %dqk -> %out : memref<2x4x8xf32> -> memref<2x4x8xf32>
}
module @kernels {
  func.func @k3_tokens(%arg0: tensor<2x2x4x2xf32>) -> tensor<2x4x2x2xf32> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
    return %0 : tensor<2x4x2x2xf32>
  }
  func.func @k4_concat(%arg0: tensor<2x4x4xf32>, %arg1: tensor<2x4x4xf32>) -> tensor<2x4x8xf32> {
    %0 = tg.concat %arg0, %arg1 {axis = 2 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
    return %0 : tensor<2x4x8xf32>
  }
}

// -----

// What stays: a concatenation with an input that no GEMM wrote (the
// product stops at its transpose); a layout a GEMM cannot take (a
// transpose of the matrix dims: unit stride along rows); and an operand
// whose source is written between the layout kernel and the GEMM (by a
// command, or as the state a new value updates).
// CHECK-LABEL: exec.program @kept
// REMARK: remark: GEMM's product written, as strides, where the transpose after it put it; not through the concatenation after that: the concatenation has an input that is not a library call's output folded into it
// REMARK: remark: GEMM's a not read through the transpose before it: a strided GEMM cannot take that layout
// REMARK: remark: GEMM's a not read through the slice before it: a command between them writes what it reads
// REMARK: remark: GEMM's a not read through the slice before it: a command between them writes what it reads
// CHECK: %[[A:.*]] = exec.resource input "a"
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} {{{.*}}ldc = 4 : i64
// CHECK: exec.dispatch @kernels::@k3_tokens(%[[A]])
// CHECK: exec.dispatch @kernels::@k4_concat
// CHECK: exec.dispatch @kernels::@k5_swap
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64}
// CHECK: exec.dispatch @kernels::@k6_slice
// CHECK: exec.dispatch @kernels::@k7_overwrite
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64}
// CHECK: exec.dispatch @kernels::@k6_slice
// CHECK: exec.dispatch @kernels::@k7_overwrite
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64}
exec.program @kept attributes {batch_size = 2 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 4 : i64, vocab_size = 1 : i64} {
  %p = exec.resource input "p" : memref<2x2x4x4xf32>
  %x = exec.resource input "x" : memref<2x2x4x2xf32>
  %a = exec.resource input "a" : memref<2x2x4x2xf32>
  %dq = exec.resource scratch : memref<2x2x4x2xf32>
  %t0 = exec.gemm(%p, %x) -> %dq {batch = 4 : i64, k = 4 : i64, m = 4 : i64, n = 2 : i64, stride_a = 16 : i64, stride_b = 8 : i64, stride_c = 8 : i64} : memref<2x2x4x4xf32>, memref<2x2x4x2xf32> -> memref<2x2x4x2xf32>
  %dqt = exec.resource scratch : memref<2x4x2x2xf32>
  %t2 = exec.dispatch @kernels::@k3_tokens(%dq) -> (%dqt) : (memref<2x2x4x2xf32>) -> memref<2x4x2x2xf32>
  %at = exec.resource scratch : memref<2x4x2x2xf32>
  %t3 = exec.dispatch @kernels::@k3_tokens(%a) -> (%at) : (memref<2x2x4x2xf32>) -> memref<2x4x2x2xf32>
  %dqm = exec.view %dqt : memref<2x4x2x2xf32> to memref<2x4x4xf32>
  %am = exec.view %at : memref<2x4x2x2xf32> to memref<2x4x4xf32>
  %dqk = exec.resource scratch : memref<2x4x8xf32>
  %t4 = exec.dispatch @kernels::@k4_concat(%dqm, %am) -> (%dqk) : (memref<2x4x4xf32>, memref<2x4x4xf32>) -> memref<2x4x8xf32>
  %dqkout = exec.resource output "dqk" : memref<2x4x8xf32>
  %t4c = exec.copy %dqk -> %dqkout : memref<2x4x8xf32> -> memref<2x4x8xf32>
  %m = exec.resource input "m" : memref<2x2xf32>
  %mt = exec.resource scratch : memref<2x2xf32>
  %t5 = exec.dispatch @kernels::@k5_swap(%m) -> (%mt) : (memref<2x2xf32>) -> memref<2x2xf32>
  %y = exec.resource output "y" : memref<2x2xf32>
  %t6 = exec.gemm(%mt, %m) -> %y {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64} : memref<2x2xf32>, memref<2x2xf32> -> memref<2x2xf32>
  %src = exec.resource scratch : memref<2x4xf32>
  %half = exec.resource scratch : memref<2x2xf32>
  %t8 = exec.dispatch @kernels::@k6_slice(%src) -> (%half) : (memref<2x4xf32>) -> memref<2x2xf32>
  %t9 = exec.dispatch @kernels::@k7_overwrite(%m) -> (%src) : (memref<2x2xf32>) -> memref<2x4xf32>
  %z = exec.resource output "z" : memref<2x2xf32>
  %t10 = exec.gemm(%half, %m) -> %z {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64} : memref<2x2xf32>, memref<2x2xf32> -> memref<2x2xf32>
  // A state's new value, written in its place, counts as writing the state.
  %w = exec.resource parameter "w" : memref<2x4xf32>
  %wh = exec.resource scratch : memref<2x2xf32>
  %t11 = exec.dispatch @kernels::@k6_slice(%w) -> (%wh) : (memref<2x4xf32>) -> memref<2x2xf32>
  %neww = exec.resource scratch updates(%w : memref<2x4xf32>) : memref<2x4xf32>
  %t12 = exec.dispatch @kernels::@k7_overwrite(%m) -> (%neww) : (memref<2x2xf32>) -> memref<2x4xf32>
  %z2 = exec.resource output "z2" : memref<2x2xf32>
  %t13 = exec.gemm(%wh, %m) -> %z2 {batch = 1 : i64, k = 2 : i64, m = 2 : i64, n = 2 : i64, stride_a = 4 : i64, stride_b = 0 : i64, stride_c = 4 : i64} : memref<2x2xf32>, memref<2x2xf32> -> memref<2x2xf32>
}
module @kernels {
  func.func @k3_tokens(%arg0: tensor<2x2x4x2xf32>) -> tensor<2x4x2x2xf32> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x2x4x2xf32> -> tensor<2x4x2x2xf32>
    return %0 : tensor<2x4x2x2xf32>
  }
  func.func @k4_concat(%arg0: tensor<2x4x4xf32>, %arg1: tensor<2x4x4xf32>) -> tensor<2x4x8xf32> {
    %0 = tg.concat %arg0, %arg1 {axis = 2 : i64} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
    return %0 : tensor<2x4x8xf32>
  }
  func.func @k5_swap(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
    %0 = tg.transpose %arg0 [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
  func.func @k6_slice(%arg0: tensor<2x4xf32>) -> tensor<2x2xf32> {
    %0 = tg.slice %arg0[[0, 0]] [[2, 2]] : tensor<2x4xf32> -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
  func.func @k7_overwrite(%arg0: tensor<2x2xf32>) -> tensor<2x4xf32> {
    %0 = tg.concat %arg0, %arg0 {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}

// -----

// The runtime's flash attention (exec.attention) reads q, k and v where the
// fused projection wrote them and dO in the tokens' layout: [B, H, T, D] at
// strides (T x 3HD, D, 3HD) from offsets 0, HD and 2HD of qkv, and
// (T x HD, D, HD) of dO; the slices and transposes go. The gradient's result
// stays the tokens-layout copy it reads (strides T x HD, D, HD), and so does
// the transpose writing it, which the output projection reads too.
// CHECK-LABEL: exec.program @flash
// REMARK: remark: attention's query read, as strides, where the slice and the transpose before it read it
// REMARK: remark: attention gradient's result gradient read, as strides, where the transpose before it read it
// CHECK: %[[QKV:.*]] = exec.resource input "qkv" : memref<2x64x384xbf16>
// CHECK: %[[DY:.*]] = exec.resource input "dy" : memref<2x64x128xbf16>
// CHECK-NOT: exec.dispatch
// CHECK: %[[Q:.*]] = exec.view %[[QKV]][0] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: %[[K:.*]] = exec.view %[[QKV]][128] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: %[[V:.*]] = exec.view %[[QKV]][256] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: exec.attention(%[[Q]], %[[K]], %[[V]]) -> (%[[O:.*]], %[[LSE:.*]]) {{{.*}}strides = array<i64: 24576, 64, 384, 24576, 64, 384, 24576, 64, 384, 8192, 4096, 64>
// CHECK: %[[OT:.*]] = exec.resource output "o_tokens"
// CHECK: exec.dispatch @kernels::@k1_tokens(%[[O]]) -> (%[[OT]])
// CHECK: %[[DYS:.*]] = exec.view %[[DY]] : memref<2x64x128xbf16> to memref<2x64x2x64xbf16>
// CHECK-NOT: exec.dispatch
// CHECK: %[[DO:.*]] = exec.view %[[DYS]][0] : memref<2x64x2x64xbf16> to memref<16384xbf16>
// CHECK: exec.attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[OT]], %[[LSE]], %[[DO]]) -> ({{.*}}) {{{.*}}strides = array<i64: 24576, 64, 384, 24576, 64, 384, 24576, 64, 384, 8192, 64, 128, 8192, 64, 128, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64>
// CHECK: module @kernels
// CHECK-NOT: func.func @k0_
// CHECK: func.func @k1_tokens
// CHECK-NOT: func.func @k0_
exec.program @flash attributes {batch_size = 2 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 64 : i64, vocab_size = 1 : i64} {
  %qkv = exec.resource input "qkv" : memref<2x64x384xbf16>
  %dy = exec.resource input "dy" : memref<2x64x128xbf16>
  %q = exec.resource scratch : memref<2x64x128xbf16>
  %t0 = exec.dispatch @kernels::@k0_slice_q(%qkv) -> (%q) : (memref<2x64x384xbf16>) -> memref<2x64x128xbf16>
  %qs = exec.view %q : memref<2x64x128xbf16> to memref<2x64x2x64xbf16>
  %qh = exec.resource scratch : memref<2x2x64x64xbf16>
  %t1 = exec.dispatch @kernels::@k0_heads(%qs) -> (%qh) : (memref<2x64x2x64xbf16>) -> memref<2x2x64x64xbf16>
  %k = exec.resource scratch : memref<2x64x128xbf16>
  %t2 = exec.dispatch @kernels::@k0_slice_k(%qkv) -> (%k) : (memref<2x64x384xbf16>) -> memref<2x64x128xbf16>
  %ks = exec.view %k : memref<2x64x128xbf16> to memref<2x64x2x64xbf16>
  %kh = exec.resource scratch : memref<2x2x64x64xbf16>
  %t3 = exec.dispatch @kernels::@k0_heads(%ks) -> (%kh) : (memref<2x64x2x64xbf16>) -> memref<2x2x64x64xbf16>
  %v = exec.resource scratch : memref<2x64x128xbf16>
  %t4 = exec.dispatch @kernels::@k0_slice_v(%qkv) -> (%v) : (memref<2x64x384xbf16>) -> memref<2x64x128xbf16>
  %vs = exec.view %v : memref<2x64x128xbf16> to memref<2x64x2x64xbf16>
  %vh = exec.resource scratch : memref<2x2x64x64xbf16>
  %t5 = exec.dispatch @kernels::@k0_heads(%vs) -> (%vh) : (memref<2x64x2x64xbf16>) -> memref<2x2x64x64xbf16>
  %o = exec.resource scratch : memref<2x2x64x64xbf16>
  %lse = exec.resource scratch : memref<2x2x64xf32>
  %t6 = exec.attention(%qh, %kh, %vh) -> (%o, %lse) {batch = 2, query_heads = 2, key_heads = 2, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64>} : (memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>) -> (memref<2x2x64x64xbf16>, memref<2x2x64xf32>)
  %ot = exec.resource output "o_tokens" : memref<2x64x2x64xbf16>
  %t7 = exec.dispatch @kernels::@k1_tokens(%o) -> (%ot) : (memref<2x2x64x64xbf16>) -> memref<2x64x2x64xbf16>
  %dys = exec.view %dy : memref<2x64x128xbf16> to memref<2x64x2x64xbf16>
  %doh = exec.resource scratch : memref<2x2x64x64xbf16>
  %t8 = exec.dispatch @kernels::@k0_heads(%dys) -> (%doh) : (memref<2x64x2x64xbf16>) -> memref<2x2x64x64xbf16>
  %delta = exec.resource scratch : memref<2x2x64xf32>
  %dq = exec.resource output "dq" : memref<2x2x64x64xbf16>
  %dk = exec.resource output "dk" : memref<2x2x64x64xbf16>
  %dv = exec.resource output "dv" : memref<2x2x64x64xbf16>
  %t9 = exec.attention(%qh, %kh, %vh, %ot, %lse, %doh) -> (%delta, %dq, %dk, %dv) {gradient, batch = 2, query_heads = 2, key_heads = 2, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 64, 128, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64>} : (memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x64x2x64xbf16>, memref<2x2x64xf32>, memref<2x2x64x64xbf16>) -> (memref<2x2x64xf32>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>)
}
module @kernels {
  func.func @k0_slice_q(%arg0: tensor<2x64x384xbf16>) -> tensor<2x64x128xbf16> {
    %0 = tg.slice %arg0[[0, 0, 0]] [[2, 64, 128]] : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
    return %0 : tensor<2x64x128xbf16>
  }
  func.func @k0_slice_k(%arg0: tensor<2x64x384xbf16>) -> tensor<2x64x128xbf16> {
    %0 = tg.slice %arg0[[0, 0, 128]] [[2, 64, 128]] : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
    return %0 : tensor<2x64x128xbf16>
  }
  func.func @k0_slice_v(%arg0: tensor<2x64x384xbf16>) -> tensor<2x64x128xbf16> {
    %0 = tg.slice %arg0[[0, 0, 256]] [[2, 64, 128]] : tensor<2x64x384xbf16> -> tensor<2x64x128xbf16>
    return %0 : tensor<2x64x128xbf16>
  }
  func.func @k0_heads(%arg0: tensor<2x64x2x64xbf16>) -> tensor<2x2x64x64xbf16> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x64x2x64xbf16> -> tensor<2x2x64x64xbf16>
    return %0 : tensor<2x2x64x64xbf16>
  }
  func.func @k1_tokens(%arg0: tensor<2x2x64x64xbf16>) -> tensor<2x64x2x64xbf16> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x2x64x64xbf16> -> tensor<2x64x2x64xbf16>
    return %0 : tensor<2x64x2x64xbf16>
  }
}

// -----

// The runtime attention's outputs go where the layout kernels after them put
// them: the forward writes its result straight into the tokens' layout the
// output projection and the gradient read (strides T x HD, D, HD), and the
// gradient writes dq, dk and dv into their slots of the projection's
// gradient (offsets 0, HD and 2HD, strides T x 3HD, D, 3HD): the four
// transposes and the concatenation go.
// CHECK-LABEL: exec.program @flash_outputs
// REMARK: remark: attention's result written, as strides, where the transpose after it put it
// REMARK: remark: attention gradient's query gradient written, as strides, where the transpose and the concatenation after it put it
// REMARK: remark: attention gradient's value gradient written, as strides, where the transpose and the concatenation after it put it
// CHECK: %[[OT:.*]] = exec.resource scratch : memref<2x64x2x64xbf16>
// CHECK: %[[O:.*]] = exec.view %[[OT]][0] : memref<2x64x2x64xbf16> to memref<16384xbf16>
// CHECK: exec.attention(%{{.*}}, %{{.*}}, %{{.*}}) -> (%[[O]], %[[LSE:.*]]) {{{.*}}strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 64, 128>
// CHECK: %[[G:.*]] = exec.resource scratch : memref<2x64x384xbf16>
// CHECK: %[[DQ:.*]] = exec.view %[[G]][0] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: %[[DK:.*]] = exec.view %[[G]][128] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: %[[DV:.*]] = exec.view %[[G]][256] : memref<2x64x384xbf16> to memref<48896xbf16>
// CHECK: exec.attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[OT]], %[[LSE]], %{{.*}}) -> (%{{.*}}, %[[DQ]], %[[DK]], %[[DV]]) {{{.*}}strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 64, 128, 8192, 4096, 64, 24576, 64, 384, 24576, 64, 384, 24576, 64, 384>
// CHECK-NOT: exec.dispatch
// CHECK: module @kernels
// CHECK-NOT: func.func
exec.program @flash_outputs attributes {batch_size = 2 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 64 : i64, vocab_size = 1 : i64} {
  %qh = exec.resource input "q" : memref<2x2x64x64xbf16>
  %kh = exec.resource input "k" : memref<2x2x64x64xbf16>
  %vh = exec.resource input "v" : memref<2x2x64x64xbf16>
  %doh = exec.resource input "do" : memref<2x2x64x64xbf16>
  %w = exec.resource parameter "w" : memref<128x128xbf16>
  %o = exec.resource scratch : memref<2x2x64x64xbf16>
  %lse = exec.resource scratch : memref<2x2x64xf32>
  %t0 = exec.attention(%qh, %kh, %vh) -> (%o, %lse) {batch = 2, query_heads = 2, key_heads = 2, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64>} : (memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>) -> (memref<2x2x64x64xbf16>, memref<2x2x64xf32>)
  %ot = exec.resource scratch : memref<2x64x2x64xbf16>
  %t1 = exec.dispatch @kernels::@k1_tokens(%o) -> (%ot) : (memref<2x2x64x64xbf16>) -> memref<2x64x2x64xbf16>
  %om = exec.view %ot : memref<2x64x2x64xbf16> to memref<2x64x128xbf16>
  %y = exec.resource output "y" : memref<2x64x128xbf16>
  %t2 = exec.gemm(%om, %w) -> %y {batch = 1 : i64, k = 128 : i64, m = 128 : i64, n = 128 : i64, stride_a = 16384 : i64, stride_b = 0 : i64, stride_c = 16384 : i64} : memref<2x64x128xbf16>, memref<128x128xbf16> -> memref<2x64x128xbf16>
  %delta = exec.resource scratch : memref<2x2x64xf32>
  %dq = exec.resource scratch : memref<2x2x64x64xbf16>
  %dk = exec.resource scratch : memref<2x2x64x64xbf16>
  %dv = exec.resource scratch : memref<2x2x64x64xbf16>
  %t3 = exec.attention(%qh, %kh, %vh, %ot, %lse, %doh) -> (%delta, %dq, %dk, %dv) {gradient, batch = 2, query_heads = 2, key_heads = 2, query_len = 64, key_len = 64, head_dim = 64, scale = 0.125, causal = true, window = 0, strides = array<i64: 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 64, 128, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64, 8192, 4096, 64>} : (memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x64x2x64xbf16>, memref<2x2x64xf32>, memref<2x2x64x64xbf16>) -> (memref<2x2x64xf32>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>, memref<2x2x64x64xbf16>)
  %dqt = exec.resource scratch : memref<2x64x2x64xbf16>
  %t4 = exec.dispatch @kernels::@k1_tokens(%dq) -> (%dqt) : (memref<2x2x64x64xbf16>) -> memref<2x64x2x64xbf16>
  %dkt = exec.resource scratch : memref<2x64x2x64xbf16>
  %t5 = exec.dispatch @kernels::@k1_tokens(%dk) -> (%dkt) : (memref<2x2x64x64xbf16>) -> memref<2x64x2x64xbf16>
  %dvt = exec.resource scratch : memref<2x64x2x64xbf16>
  %t6 = exec.dispatch @kernels::@k1_tokens(%dv) -> (%dvt) : (memref<2x2x64x64xbf16>) -> memref<2x64x2x64xbf16>
  %dqm = exec.view %dqt : memref<2x64x2x64xbf16> to memref<2x64x128xbf16>
  %dkm = exec.view %dkt : memref<2x64x2x64xbf16> to memref<2x64x128xbf16>
  %dvm = exec.view %dvt : memref<2x64x2x64xbf16> to memref<2x64x128xbf16>
  %g = exec.resource scratch : memref<2x64x384xbf16>
  %t7 = exec.dispatch @kernels::@k2_concat(%dqm, %dkm, %dvm) -> (%g) : (memref<2x64x128xbf16>, memref<2x64x128xbf16>, memref<2x64x128xbf16>) -> memref<2x64x384xbf16>
  %gw = exec.resource output "gw" : memref<128x384xbf16>
  %x = exec.resource input "x" : memref<2x64x128xbf16>
  %t8 = exec.gemm(%x, %g) -> %gw {batch = 1 : i64, k = 128 : i64, m = 128 : i64, n = 384 : i64, stride_a = 0 : i64, stride_b = 0 : i64, stride_c = 0 : i64, transpose_a} : memref<2x64x128xbf16>, memref<2x64x384xbf16> -> memref<128x384xbf16>
}
module @kernels {
  func.func @k1_tokens(%arg0: tensor<2x2x64x64xbf16>) -> tensor<2x64x2x64xbf16> {
    %0 = tg.transpose %arg0 [0, 2, 1, 3] : tensor<2x2x64x64xbf16> -> tensor<2x64x2x64xbf16>
    return %0 : tensor<2x64x2x64xbf16>
  }
  func.func @k2_concat(%arg0: tensor<2x64x128xbf16>, %arg1: tensor<2x64x128xbf16>, %arg2: tensor<2x64x128xbf16>) -> tensor<2x64x384xbf16> {
    %0 = tg.concat %arg0, %arg1, %arg2 {axis = 2 : i64} : (tensor<2x64x128xbf16>, tensor<2x64x128xbf16>, tensor<2x64x128xbf16>) -> tensor<2x64x384xbf16>
    return %0 : tensor<2x64x384xbf16>
  }
}
