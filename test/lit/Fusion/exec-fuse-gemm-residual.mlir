// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-residual | FileCheck %s
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-residual=remarks=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// The residual add in a norm's kernel (tg-fuse-into-rows' prologue), which
// returns the sum as the residual stream: the GEMM adds x and writes the
// stream; both dispatches run one copy of the kernel without the add, which
// reads the stream alone and writes only the norm. The products' buffers go;
// the later stream's buffer moves up to its GEMM.
// CHECK-LABEL: exec.program @norm_prologue
// CHECK: %[[X:.*]] = exec.resource input "x"
// CHECK: %[[S1:.*]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT: exec.gemm(%[[X]], %{{.*}}) -> %[[S1]] bias(%{{.*}} : memref<8xf32>) addend(%[[X]] : memref<2x8xf32>)
// CHECK: %[[N1:.*]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT: exec.dispatch @kernels::@k0_layer_norm(%[[S1]], %{{.*}}, %{{.*}}) -> (%[[N1]]) : (memref<2x8xf32>, memref<8xf32>, memref<8xf32>) -> memref<2x8xf32>
// CHECK: %[[S2:.*]] = exec.resource output "s2"
// CHECK-NEXT: exec.gemm(%[[N1]], %{{.*}}) -> %[[S2]] addend(%[[S1]] : memref<2x8xf32>)
// CHECK: exec.dispatch @kernels::@k0_layer_norm(%[[S2]], %{{.*}}, %{{.*}}) -> (%{{.*}})
// CHECK-NOT: exec.dispatch
// CHECK: func.func @k0_layer_norm(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: tg.layer_norm %arg0, %arg1, %arg2
// CHECK-NOT: func.func @k0_add_to_layer_norm
// REMARK-COUNT-2: remark: add of a GEMM's product folded into the GEMM, which adds the other term as it writes the sum: the kernel moves 128 bytes fewer, the GEMM reads 64 more
exec.program @norm_prologue attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x8xf32>
  %w = exec.resource parameter "w" : memref<8x8xf32>
  %b = exec.resource parameter "b" : memref<8xf32>
  %g = exec.resource parameter "g" : memref<8xf32>
  %p1 = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p1 bias(%b : memref<8xf32>) {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %n1 = exec.resource scratch : memref<2x8xf32>
  %s1 = exec.resource scratch : memref<2x8xf32>
  %t1 = exec.dispatch @kernels::@k0_add_to_layer_norm(%x, %p1, %g, %b) -> (%n1, %s1) : (memref<2x8xf32>, memref<2x8xf32>, memref<8xf32>, memref<8xf32>) -> (memref<2x8xf32>, memref<2x8xf32>)
  %p2 = exec.resource scratch : memref<2x8xf32>
  %t2 = exec.gemm(%n1, %w) -> %p2 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %n2 = exec.resource output "n2" : memref<2x8xf32>
  %s2 = exec.resource output "s2" : memref<2x8xf32>
  %t3 = exec.dispatch @kernels::@k0_add_to_layer_norm(%s1, %p2, %g, %b) -> (%n2, %s2) : (memref<2x8xf32>, memref<2x8xf32>, memref<8xf32>, memref<8xf32>) -> (memref<2x8xf32>, memref<2x8xf32>)
}
module @kernels {
  func.func @k0_add_to_layer_norm(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %1 = tg.layer_norm %0, %arg2, %arg3 {epsilon = 1.000000e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %1, %0 : tensor<2x8xf32>, tensor<2x8xf32>
  }
}

// -----

// A kernel that is only the add goes with its dispatch: the GEMM writes the
// add's output. A kernel that does not store the sum (it feeds a norm only)
// and reads x again keeps its add: the GEMM's read of x would cost more than
// the kernel saves.
// CHECK-LABEL: exec.program @whole_and_inner
// CHECK: %[[X:.*]] = exec.resource input "x"
// CHECK: %[[Y:.*]] = exec.resource output "y"
// CHECK-NEXT: exec.gemm(%[[X]], %{{.*}}) -> %[[Y]] addend(%[[X]] : memref<2x8xf32>)
// CHECK-NOT: k1_add(
// CHECK: %[[P:.*]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT: exec.gemm(%[[X]], %{{.*}}) -> %[[P]] {
// CHECK: exec.dispatch @kernels::@k2_add_to_rms_norm(%[[X]], %[[P]], %{{.*}})
// CHECK-NOT: func.func @k1_add
// CHECK: func.func @k2_add_to_rms_norm
// REMARK: remark: add of a GEMM's product folded into the GEMM, which adds the other term as it writes the sum: the kernel goes, 192 bytes fewer, the GEMM reads 64 more
// REMARK: remark: add of a GEMM's product not folded into the GEMM: the kernel does not store the sum, so it would move no fewer bytes than the GEMM's added read of the other term
exec.program @whole_and_inner attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x8xf32>
  %w = exec.resource parameter "w" : memref<8x8xf32>
  %g = exec.resource parameter "g" : memref<8xf32>
  %p1 = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p1 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y = exec.resource output "y" : memref<2x8xf32>
  %t1 = exec.dispatch @kernels::@k1_add(%p1, %x) -> (%y) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p2 = exec.resource scratch : memref<2x8xf32>
  %t2 = exec.gemm(%x, %w) -> %p2 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %z = exec.resource output "z" : memref<2x8xf32>
  %t3 = exec.dispatch @kernels::@k2_add_to_rms_norm(%x, %p2, %g) -> (%z) : (memref<2x8xf32>, memref<2x8xf32>, memref<8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k1_add(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
  func.func @k2_add_to_rms_norm(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %1 = tg.mul %arg0, %0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %2 = tg.rms_norm %1, %arg2 {epsilon = 1.000000e-05 : f64} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %2 : tensor<2x8xf32>
  }
}

// -----

// What must not fold: the other term written between the GEMM and the add
// (a tied embedding's gradient: the GEMM's part, then the lookup's); a GEMM
// with GELU's epilogue; a product another command reads too; a batched GEMM;
// a kernel reading the other term again; an add that broadcasts (a bias; not
// even a candidate).
// CHECK-LABEL: exec.program @kept
// CHECK-NOT: addend(
// CHECK: exec.dispatch @kernels::@k3_add(
// CHECK: exec.dispatch @kernels::@k3_add(
// CHECK: exec.dispatch @kernels::@k3_add(
// CHECK: exec.dispatch @kernels::@k3_add(
// CHECK: exec.dispatch @kernels::@k5_add_to_mul(
// CHECK: exec.dispatch @kernels::@k4_add(
// REMARK: remark: add of a GEMM's product not folded into the GEMM: a command between the GEMM and the add writes the other term
// REMARK: remark: add of a GEMM's product not folded into the GEMM: the GEMM applies an activation or adds a matrix already
// REMARK: remark: add of a GEMM's product not folded into the GEMM: the GEMM is batched or writes a strided product
// REMARK: remark: add of a GEMM's product not folded into the GEMM: the kernel reads the other term again, so it would move no fewer bytes than the GEMM's added read of it
// REMARK-NOT: remark
exec.program @kept attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x8xf32>
  %w = exec.resource parameter "w" : memref<8x8xf32>
  %b = exec.resource parameter "b" : memref<8xf32>
  %p1 = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.gemm(%x, %w) -> %p1 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %e = exec.resource scratch : memref<2x8xf32>
  %t1 = exec.copy %x -> %e : memref<2x8xf32> -> memref<2x8xf32>
  %y1 = exec.resource output "y1" : memref<2x8xf32>
  %t2 = exec.dispatch @kernels::@k3_add(%p1, %e) -> (%y1) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %aux = exec.resource scratch : memref<2x8xf32>
  %p2 = exec.resource scratch : memref<2x8xf32>
  %t3 = exec.gemm(%x, %w) -> %p2 aux(%aux : memref<2x8xf32>) activation gelu_tanh {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y2 = exec.resource output "y2" : memref<2x8xf32>
  %t4 = exec.dispatch @kernels::@k3_add(%p2, %x) -> (%y2) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p3 = exec.resource scratch : memref<2x8xf32>
  %t5 = exec.gemm(%x, %w) -> %p3 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y3 = exec.resource output "y3" : memref<2x8xf32>
  %t6 = exec.dispatch @kernels::@k3_add(%p3, %x) -> (%y3) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %y4 = exec.resource output "y4" : memref<2x8xf32>
  %t7 = exec.copy %p3 -> %y4 : memref<2x8xf32> -> memref<2x8xf32>
  %p4 = exec.resource scratch : memref<2x8xf32>
  %t8 = exec.gemm(%x, %w) -> %p4 {m = 1, n = 8, k = 8, batch = 2, stride_a = 8, stride_b = 0, stride_c = 8} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y5 = exec.resource output "y5" : memref<2x8xf32>
  %t9 = exec.dispatch @kernels::@k3_add(%p4, %x) -> (%y5) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p6 = exec.resource scratch : memref<2x8xf32>
  %t12 = exec.gemm(%x, %w) -> %p6 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y7 = exec.resource output "y7" : memref<2x8xf32>
  %y8 = exec.resource output "y8" : memref<2x8xf32>
  %t13 = exec.dispatch @kernels::@k5_add_to_mul(%x, %p6) -> (%y7, %y8) : (memref<2x8xf32>, memref<2x8xf32>) -> (memref<2x8xf32>, memref<2x8xf32>)
  %p5 = exec.resource scratch : memref<2x8xf32>
  %t10 = exec.gemm(%x, %w) -> %p5 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y6 = exec.resource output "y6" : memref<2x8xf32>
  %t11 = exec.dispatch @kernels::@k4_add(%p5, %b) -> (%y6) : (memref<2x8xf32>, memref<8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k3_add(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
  func.func @k5_add_to_mul(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    %1 = tg.mul %arg0, %0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %1, %0 : tensor<2x8xf32>, tensor<2x8xf32>
  }
  func.func @k4_add(%arg0: tensor<2x8xf32>, %arg1: tensor<8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// Nor where the GEMM would write the sum into a buffer it reads (here a), a
// command between the two reads the sum's buffer, or a command awaits the
// add; the kernel stays for those dispatches while another of its
// dispatches folds.
// CHECK-LABEL: exec.program @ordering
// CHECK: exec.dispatch @kernels::@k6_add(
// CHECK: exec.dispatch @kernels::@k6_add(
// CHECK: exec.dispatch @kernels::@k6_add(
// CHECK: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} addend(
// CHECK-NOT: exec.dispatch @kernels::@k6_add(
// CHECK: func.func @k6_add
// REMARK: remark: add of a GEMM's product not folded into the GEMM: the sum's buffer is one the GEMM reads
// REMARK: remark: add of a GEMM's product not folded into the GEMM: a command between the GEMM and the add uses the sum's buffer
// REMARK: remark: add of a GEMM's product not folded into the GEMM: a command awaits the add
// REMARK: remark: add of a GEMM's product folded into the GEMM, which adds the other term as it writes the sum: the kernel goes, 192 bytes fewer, the GEMM reads 64 more
exec.program @ordering attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<2x8xf32>
  %w = exec.resource parameter "w" : memref<8x8xf32>
  %s = exec.resource scratch : memref<2x8xf32>
  %t0 = exec.copy %x -> %s : memref<2x8xf32> -> memref<2x8xf32>
  %p1 = exec.resource scratch : memref<2x8xf32>
  %t1 = exec.gemm(%s, %w) -> %p1 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %t2 = exec.dispatch @kernels::@k6_add(%p1, %x) -> (%s) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %y1 = exec.resource output "y1" : memref<2x8xf32>
  %p2 = exec.resource scratch : memref<2x8xf32>
  %t3 = exec.gemm(%x, %w) -> %p2 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y0 = exec.resource output "y0" : memref<2x8xf32>
  %t4 = exec.copy %y1 -> %y0 : memref<2x8xf32> -> memref<2x8xf32>
  %t5 = exec.dispatch @kernels::@k6_add(%p2, %x) -> (%y1) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %p3 = exec.resource scratch : memref<2x8xf32>
  %t6 = exec.gemm(%x, %w) -> %p3 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y2 = exec.resource output "y2" : memref<2x8xf32>
  %t7 = exec.dispatch @kernels::@k6_add(%p3, %x) -> (%y2) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
  %y3 = exec.resource output "y3" : memref<2x8xf32>
  %t8 = exec.copy %y2 -> %y3 await(%t7) : memref<2x8xf32> -> memref<2x8xf32>
  %p4 = exec.resource scratch : memref<2x8xf32>
  %t9 = exec.gemm(%x, %w) -> %p4 {m = 2, n = 8, k = 8, batch = 1, stride_a = 16, stride_b = 0, stride_c = 16} : memref<2x8xf32>, memref<8x8xf32> -> memref<2x8xf32>
  %y4 = exec.resource output "y4" : memref<2x8xf32>
  %t10 = exec.dispatch @kernels::@k6_add(%p4, %x) -> (%y4) : (memref<2x8xf32>, memref<2x8xf32>) -> memref<2x8xf32>
}
module @kernels {
  func.func @k6_add(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
    %0 = tg.add %arg0, %arg1 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}
