// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-activation='bias-grad=true' | FileCheck %s
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-activation='remarks=true bias-grad=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-activation='wide=true bias-grad=true' | FileCheck %s --check-prefix=WIDE
// RUN: tg-opt %s --split-input-file --exec-fuse-gemm-activation | FileCheck %s --check-prefix=NOGRAD

// An MLP's GELU and its gradient (bf16). Forward: the GEMM with its bias
// epilogue writes the GELU to the dispatch's output, declared after the
// GEMM and moved up to it, and keeps the sum before it in aux (the buffer
// it wrote before). Backward: the GEMM computing the gradient of GELU's
// output multiplies it by GELU's derivative at that aux and writes the
// dispatch's output; its product buffer goes. Both kernels go.
// CHECK-LABEL: exec.program @mlp
// CHECK: %[[PRE:.*]] = exec.resource scratch : memref<4x8xbf16>
// CHECK-NEXT: %[[ACT:.*]] = exec.resource scratch : memref<4x8xbf16>
// CHECK-NEXT: exec.gemm(%{{.*}}, %{{.*}}) -> %[[ACT]] bias(%{{.*}} : memref<8xbf16>) aux(%[[PRE]] : memref<4x8xbf16>) activation gelu_tanh {
// CHECK: %[[DPRE:.*]] = exec.resource scratch : memref<4x8xbf16>
// CHECK-NEXT: exec.gemm(%{{.*}}, %{{.*}}) -> %[[DPRE]] aux(%[[PRE]] : memref<4x8xbf16>) activation gelu_tanh_grad {
// CHECK-NOT: @k0_gelu
// CHECK-NOT: @k1_gelu_grad
// CHECK: exec.dispatch @kernels::@k2_mul
// CHECK-NOT: func.func @k0_gelu
// CHECK-NOT: func.func @k1_gelu_grad
// REMARK: remark: gelu folded into the GEMM's epilogue (GELU_AUX_BIAS): the GEMM writes it, and keeps its input for the gradient
// REMARK: remark: gelu_grad folded into the GEMM's epilogue (DGELU): the GEMM's product is never stored
exec.program @mlp attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<4x2xbf16>
  %w = exec.resource parameter "w" : memref<2x8xbf16>
  %b = exec.resource parameter "b" : memref<8xbf16>
  %dy = exec.resource input "dy" : memref<4x2xbf16>
  %wt = exec.resource parameter "wt" : memref<8x2xbf16>
  %pre = exec.resource scratch : memref<4x8xbf16>
  %t0 = exec.gemm(%x, %w) -> %pre bias(%b : memref<8xbf16>) {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32} : memref<4x2xbf16>, memref<2x8xbf16> -> memref<4x8xbf16>
  %act = exec.resource scratch : memref<4x8xbf16>
  %t1 = exec.dispatch @kernels::@k0_gelu(%pre) -> (%act) : (memref<4x8xbf16>) -> memref<4x8xbf16>
  %dact = exec.resource scratch : memref<4x8xbf16>
  %t2 = exec.gemm(%dy, %wt) -> %dact {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32, transpose_b} : memref<4x2xbf16>, memref<8x2xbf16> -> memref<4x8xbf16>
  %dpre = exec.resource scratch : memref<4x8xbf16>
  %t3 = exec.dispatch @kernels::@k1_gelu_grad(%pre, %dact) -> (%dpre) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
  %y = exec.resource output "y" : memref<4x8xbf16>
  %t4 = exec.dispatch @kernels::@k2_mul(%act, %dpre) -> (%y) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
}
module @kernels {
  func.func @k0_gelu(%arg0: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.gelu %arg0 tanh : tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
  func.func @k1_gelu_grad(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.gelu_grad %arg0, %arg1 tanh : tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
  func.func @k2_mul(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.mul %arg0, %arg1 : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
}

// -----

// What stays: the exact (erf) GELU; a GELU gradient whose product another
// kernel also reads; a GELU gradient after a biased GEMM; an f64 GELU (on
// CUDA only the 16-bit products of mixed precision take the epilogues;
// folded with wide=true, the CPU's case).
// CHECK-LABEL: exec.program @kept
// CHECK-COUNT-5: exec.dispatch
// CHECK-NOT: exec.dispatch
// REMARK: remark: gelu not folded into a GEMM epilogue: it is the exact (erf) GELU; cuBLASLt's epilogues compute the tanh approximation
// REMARK: remark: gelu_grad not folded into a GEMM epilogue: its input is not the product of one GEMM before it, read by it alone
// REMARK: remark: gelu_grad not folded into a GEMM epilogue: the GEMM adds a bias, which DGELU does not
// REMARK: remark: gelu not folded into a GEMM epilogue: it is not a 16-bit product: on CUDA, f32 and f64 GELUs keep their kernels
// WIDE-LABEL: exec.program @kept
// WIDE-COUNT-4: exec.dispatch
// WIDE: aux(%{{.*}} : memref<4x8xf64>) activation gelu_tanh {
// WIDE-NOT: exec.dispatch
exec.program @kept attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %x = exec.resource input "x" : memref<4x2xbf16>
  %w = exec.resource parameter "w" : memref<2x8xbf16>
  %b = exec.resource parameter "b" : memref<8xbf16>
  %pre = exec.resource scratch : memref<4x8xbf16>
  %t0 = exec.gemm(%x, %w) -> %pre {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32} : memref<4x2xbf16>, memref<2x8xbf16> -> memref<4x8xbf16>
  %erf = exec.resource output "erf" : memref<4x8xbf16>
  %t1 = exec.dispatch @kernels::@k0_gelu_erf(%pre) -> (%erf) : (memref<4x8xbf16>) -> memref<4x8xbf16>
  %p2 = exec.resource scratch : memref<4x8xbf16>
  %t2 = exec.gemm(%x, %w) -> %p2 {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32} : memref<4x2xbf16>, memref<2x8xbf16> -> memref<4x8xbf16>
  %g2 = exec.resource output "g2" : memref<4x8xbf16>
  %t3 = exec.dispatch @kernels::@k1_gelu_grad(%pre, %p2) -> (%g2) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
  %also = exec.resource output "also" : memref<4x8xbf16>
  %t4 = exec.dispatch @kernels::@k0_gelu_erf(%p2) -> (%also) : (memref<4x8xbf16>) -> memref<4x8xbf16>
  %p3 = exec.resource scratch : memref<4x8xbf16>
  %t5 = exec.gemm(%x, %w) -> %p3 bias(%b : memref<8xbf16>) {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32} : memref<4x2xbf16>, memref<2x8xbf16> -> memref<4x8xbf16>
  %g3 = exec.resource output "g3" : memref<4x8xbf16>
  %t6 = exec.dispatch @kernels::@k1_gelu_grad(%pre, %p3) -> (%g3) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
  %x64 = exec.resource input "x64" : memref<4x2xf64>
  %w64 = exec.resource parameter "w64" : memref<2x8xf64>
  %p4 = exec.resource scratch : memref<4x8xf64>
  %t7 = exec.gemm(%x64, %w64) -> %p4 {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32} : memref<4x2xf64>, memref<2x8xf64> -> memref<4x8xf64>
  %g4 = exec.resource output "g4" : memref<4x8xf64>
  %t8 = exec.dispatch @kernels::@k2_gelu64(%p4) -> (%g4) : (memref<4x8xf64>) -> memref<4x8xf64>
}
module @kernels {
  func.func @k0_gelu_erf(%arg0: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.gelu %arg0 none : tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
  func.func @k1_gelu_grad(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.gelu_grad %arg0, %arg1 tanh : tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
  func.func @k2_gelu64(%arg0: tensor<4x8xf64>) -> tensor<4x8xf64> {
    %0 = tg.gelu %arg0 tanh : tensor<4x8xf64>
    return %0 : tensor<4x8xf64>
  }
}

// -----

// The sum of GELU's gradient over its rows (the gradient of the bias added
// before GELU) after the DGELU fold: the GEMM writes it too (DGELU_BGRAD),
// its buffer, declared after the GEMM, moved up to it; the sum's kernel
// goes (its axes, [1, -3], are every axis but the last, counted either
// way). Without bias-grad (the default) it stays.
// CHECK-LABEL: exec.program @bias_grad
// CHECK: %[[DB:.*]] = exec.resource scratch : memref<1x1x8xbf16>
// CHECK-NEXT: exec.gemm(%{{.*}}, %{{.*}}) -> %{{.*}} aux(%{{.*}} : memref<2x4x8xbf16>) activation gelu_tanh_grad bias_grad(%[[DB]] : memref<1x1x8xbf16>) {
// CHECK-NOT: @k1_column_sum
// CHECK: exec.dispatch @kernels::@k2_mul(%[[DB]]
// CHECK-NOT: func.func @k1_column_sum
// REMARK: remark: gelu_grad folded into the GEMM's epilogue (DGELU): the GEMM's product is never stored
// REMARK: remark: reduce_sum folded into the GEMM's epilogue (DGELU_BGRAD): the GEMM sums GELU's gradient over the rows as it writes them
// NOGRAD-LABEL: exec.program @bias_grad
// WIDE-LABEL: exec.program @bias_grad
// NOGRAD: activation gelu_tanh_grad {
// NOGRAD: exec.dispatch @kernels::@k1_column_sum
exec.program @bias_grad attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %pre = exec.resource input "pre" : memref<2x4x8xbf16>
  %dy = exec.resource input "dy" : memref<8x2xbf16>
  %wt = exec.resource parameter "wt" : memref<8x2xbf16>
  %dact = exec.resource scratch : memref<2x4x8xbf16>
  %t0 = exec.gemm(%dy, %wt) -> %dact {m = 8, n = 8, k = 2, batch = 1, stride_a = 16, stride_b = 0, stride_c = 64, transpose_b} : memref<8x2xbf16>, memref<8x2xbf16> -> memref<2x4x8xbf16>
  %dpre = exec.resource scratch : memref<2x4x8xbf16>
  %t1 = exec.dispatch @kernels::@k0_gelu_grad(%pre, %dact) -> (%dpre) : (memref<2x4x8xbf16>, memref<2x4x8xbf16>) -> memref<2x4x8xbf16>
  %db = exec.resource scratch : memref<1x1x8xbf16>
  %t2 = exec.dispatch @kernels::@k1_column_sum(%dpre) -> (%db) : (memref<2x4x8xbf16>) -> memref<1x1x8xbf16>
  %y = exec.resource output "y" : memref<1x1x8xbf16>
  %t3 = exec.dispatch @kernels::@k2_mul(%db, %db) -> (%y) : (memref<1x1x8xbf16>, memref<1x1x8xbf16>) -> memref<1x1x8xbf16>
}
module @kernels {
  func.func @k0_gelu_grad(%arg0: tensor<2x4x8xbf16>, %arg1: tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16> {
    %0 = tg.gelu_grad %arg0, %arg1 tanh : tensor<2x4x8xbf16>
    return %0 : tensor<2x4x8xbf16>
  }
  func.func @k1_column_sum(%arg0: tensor<2x4x8xbf16>) -> tensor<1x1x8xbf16> {
    %0 = tg.reduce_sum %arg0 [1, -3] {keep_dims = true} : tensor<2x4x8xbf16> -> tensor<1x1x8xbf16>
    return %0 : tensor<1x1x8xbf16>
  }
  func.func @k2_mul(%arg0: tensor<1x1x8xbf16>, %arg1: tensor<1x1x8xbf16>) -> tensor<1x1x8xbf16> {
    %0 = tg.mul %arg0, %arg1 : tensor<1x1x8xbf16>, tensor<1x1x8xbf16> -> tensor<1x1x8xbf16>
    return %0 : tensor<1x1x8xbf16>
  }
}

// -----

// Sums that stay kernels: into an output (not a scratch buffer of their
// own), and into a buffer another command writes too; a sum over the
// columns (each row's) is no bias gradient and is not considered.
// CHECK-LABEL: exec.program @bias_grad_kept
// CHECK-NOT: bias_grad(
// CHECK-COUNT-4: exec.dispatch
// REMARK: remark: reduce_sum not folded into the GEMM's epilogue (DGELU_BGRAD): its sums are not a scratch buffer of their own
// REMARK: remark: reduce_sum not folded into the GEMM's epilogue (DGELU_BGRAD): another command writes its sums
exec.program @bias_grad_kept attributes {batch_size = 1 : i64, flops_per_step = 0.0 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 0 : i64, seq_len = 1 : i64, vocab_size = 1 : i64} {
  %pre = exec.resource input "pre" : memref<4x8xbf16>
  %dy = exec.resource input "dy" : memref<4x2xbf16>
  %wt = exec.resource parameter "wt" : memref<8x2xbf16>
  %d1 = exec.resource scratch : memref<4x8xbf16>
  %t0 = exec.gemm(%dy, %wt) -> %d1 {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32, transpose_b} : memref<4x2xbf16>, memref<8x2xbf16> -> memref<4x8xbf16>
  %g1 = exec.resource scratch : memref<4x8xbf16>
  %t1 = exec.dispatch @kernels::@k0_gelu_grad(%pre, %d1) -> (%g1) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
  %s1 = exec.resource output "s1" : memref<8xbf16>
  %t2 = exec.dispatch @kernels::@k1_column_sum(%g1) -> (%s1) : (memref<4x8xbf16>) -> memref<8xbf16>
  %d2 = exec.resource scratch : memref<4x8xbf16>
  %t3 = exec.gemm(%dy, %wt) -> %d2 {m = 4, n = 8, k = 2, batch = 1, stride_a = 8, stride_b = 0, stride_c = 32, transpose_b} : memref<4x2xbf16>, memref<8x2xbf16> -> memref<4x8xbf16>
  %g2 = exec.resource scratch : memref<4x8xbf16>
  %t4 = exec.dispatch @kernels::@k0_gelu_grad(%pre, %d2) -> (%g2) : (memref<4x8xbf16>, memref<4x8xbf16>) -> memref<4x8xbf16>
  %s2 = exec.resource scratch : memref<8xbf16>
  %t5 = exec.dispatch @kernels::@k1_column_sum(%g2) -> (%s2) : (memref<4x8xbf16>) -> memref<8xbf16>
  %t6 = exec.dispatch @kernels::@k1_column_sum(%g1) -> (%s2) : (memref<4x8xbf16>) -> memref<8xbf16>
  %rows = exec.resource output "rows" : memref<4xbf16>
  %t7 = exec.dispatch @kernels::@k2_row_sum(%g2) -> (%rows) : (memref<4x8xbf16>) -> memref<4xbf16>
}
module @kernels {
  func.func @k0_gelu_grad(%arg0: tensor<4x8xbf16>, %arg1: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    %0 = tg.gelu_grad %arg0, %arg1 tanh : tensor<4x8xbf16>
    return %0 : tensor<4x8xbf16>
  }
  func.func @k1_column_sum(%arg0: tensor<4x8xbf16>) -> tensor<8xbf16> {
    %0 = tg.reduce_sum %arg0 [0] : tensor<4x8xbf16> -> tensor<8xbf16>
    return %0 : tensor<8xbf16>
  }
  func.func @k2_row_sum(%arg0: tensor<4x8xbf16>) -> tensor<4xbf16> {
    %0 = tg.reduce_sum %arg0 [1] : tensor<4x8xbf16> -> tensor<4xbf16>
    return %0 : tensor<4xbf16>
  }
}
