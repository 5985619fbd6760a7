// tgc --emit=kernels / --stats on a step: the lowering stage end to end: each op, or chain of elementwise ops, becomes a kernel on memrefs (linalg
// for elementwise ops and reductions, scf loops for row-wise ops), matmuls
// become BLAS calls, identical ops share one kernel, and the arena plan
// reuses buffers.
// RUN: tgc compile %s --emit=kernels | FileCheck %s
// RUN: tgc compile %s --emit=kernels --gemm=generated | FileCheck %s --check-prefix=GEN
// RUN: tgc compile %s --stats=json | FileCheck %s --check-prefix=STATS

func.func @train_step(%w: tensor<4x8xf32> {tg.param = "w", tg.init = #tg.init<zeros>},
                      %x: tensor<2x4xf32> {tg.input = "x"},
                      %b: tensor<8xf32> {tg.input = "b"})
    -> (tensor<f32> {tg.output = "loss"}) {
  %y = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %z = tg.add %y, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %z2 = tg.add %z, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %g = tg.gelu %z2 tanh : tensor<2x8xf32>
  %s = tg.softmax %g : tensor<2x8xf32>
  %r = tg.reduce_sum %s [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %r : tensor<f32>
}

// The matmul is no kernel, and the add of its product and b is its bias
// epilogue (exec-fuse-gemm-bias; its kernel k0 is gone); the second add and
// the gelu are one elementwise chain (tg-fuse-elementwise), which is the
// softmax's prologue (tg-fuse-into-rows): one loop over the rows computes a
// row of the chain into the output, then its softmax over it.
// CHECK-LABEL: module @kernels
// CHECK-LABEL: func.func @k1_add_to_softmax(
// CHECK-SAME:    memref<2x8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<2x8xf32>)
// CHECK-NOT:     memref.alloc
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             arith.addf
// CHECK:             math.tanh
// CHECK:             memref.store
// CHECK:           arith.maximumf
// CHECK:           math.exp
// CHECK:           arith.divf
// CHECK-NOT:     linalg.generic
// A sum over every element accumulates in f64, rounded once.
// CHECK-LABEL: func.func @k2_reduce_sum(
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f64)
// CHECK:           arith.extf
// CHECK:         arith.truncf
// CHECK-NOT:   func.func

// GEN-LABEL: func.func @k0_matmul(
// GEN:         linalg.fill
// GEN:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]
// GEN:           arith.mulf
// GEN:           arith.addf

// STATS: {"arena_bytes":{{[0-9]+}},"attention":[],"attention_calls":0,"commands":3,"communication":{"all_gather_bytes":0,"all_reduce_bytes":0,"collectives":0,"reduce_scatter_bytes":0},"compute_copy_bytes":0,"flops_per_step":128,"kernel_bytes":{{[0-9]+}},"kernel_launches":2,"kernels":2,"library_bytes":256,"library_calls":1,"mesh":{"data":1},"optimizer_bytes":0,"param_bytes":128,"peak_activation_bytes":{{[0-9]+}},"plan_seconds":{{.*}}}
