// RUN: tg-opt %s --split-input-file --tg-bufferize-kernels | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-bufferize-kernels=vector-rows=false | FileCheck %s --check-prefix=SCALAR

// A one-op kernel: tensors in, tensors out become memref inputs then one
// memref output per result (destination-passing style); the op's loops are
// written straight into the output.
// CHECK-LABEL: module @kernels
// CHECK:         func.func @k0_add(%[[A:.+]]: memref<2x8xf32>, %[[B:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<2x8xf32>) {
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[A]], %[[B]] : memref<2x8xf32>, memref<8xf32>) outs(%[[OUT]] : memref<2x8xf32>)
// CHECK:             arith.addf
// CHECK:         return
module @kernels {
  func.func @k0_add(%a: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
    %c = tg.add %a, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %c : tensor<2x8xf32>
  }
}

// -----

// A multi-op kernel that is no group (an elementwise op after a softmax):
// the intermediate value lives in a local buffer freed at the end, the
// result in the output; a value returned twice is computed once and copied
// into the second output, and a returned argument is copied.
// CHECK-LABEL: func.func @k1_fused(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4x8xf32>, %[[O0:[^:]+]]: memref<4x8xf32>, %[[O1:[^:]+]]: memref<4x8xf32>, %[[O2:[^:]+]]: memref<4x8xf32>)
// CHECK:         %[[TMP:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK:         memref.collapse_shape %[[X]]
// CHECK:         memref.collapse_shape %[[TMP]]
// CHECK:         scf.parallel
// CHECK:         linalg.generic {{.*}} ins(%[[TMP]] : memref<4x8xf32>) outs(%[[O0]] : memref<4x8xf32>)
// CHECK:           math.exp
// CHECK:         linalg.copy ins(%[[O0]] : memref<4x8xf32>) outs(%[[O1]] : memref<4x8xf32>)
// CHECK:         linalg.copy ins(%[[X]] : memref<4x8xf32>) outs(%[[O2]] : memref<4x8xf32>)
// CHECK:         memref.dealloc %[[TMP]]
// CHECK-NEXT:    return
module @kernels {
  func.func @k1_fused(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
    %s = tg.softmax %x : tensor<4x8xf32>
    %e = tg.exp %s : tensor<4x8xf32>
    return %e, %e, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// A row group with a prologue (tg-fuse-into-rows): one loop over the rows;
// each row of the residual sum is computed, stored in its output (it is
// returned), and normalised from there. No local buffer.
// CHECK-LABEL: func.func @k2_add_to_layer_norm(
// CHECK-SAME:      %[[H:[^:]+]]: memref<4x8xf32>, %[[A:[^:]+]]: memref<4x8xf32>, %[[W:[^:]+]]: memref<8xf32>, %[[B:[^:]+]]: memref<8xf32>, %[[Y:[^:]+]]: memref<4x8xf32>, %[[S:[^:]+]]: memref<4x8xf32>)
// CHECK-NOT:     memref.alloc
// CHECK-DAG:     %[[HF:.+]] = memref.collapse_shape %[[H]]
// CHECK-DAG:     %[[SF:.+]] = memref.collapse_shape %[[S]]
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %[[HF]]
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}}, %[[SF]]
// CHECK:           scf.for {{.*}} -> (f64)
// CHECK:             memref.load %[[SF]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
module @kernels {
  func.func @k2_add_to_layer_norm(%h: tensor<4x8xf32>, %a: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %s = tg.add %h, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %y = tg.layer_norm %s, %w, %b {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// A row group with an epilogue: dx is not returned, and each dx element
// goes through the add into the epilogue's output as it is computed.
// layer_norm_grad keeps each row's mean and 1/std (2 values a row, not the
// row's xhat) in a local buffer between its passes: the rows of dx, which
// compute the statistics, then the column sums over xhat recomputed from them.
// CHECK-LABEL: func.func @k3_layer_norm_grad_to_add(
// CHECK-SAME:      %{{[^:]+}}: memref<4x8xf32>, %{{[^:]+}}: memref<8xf32>, %{{[^:]+}}: memref<4x8xf32>, %[[DH:[^:]+]]: memref<4x8xf32>, %[[SUM:[^:]+]]: memref<4x8xf32>, %{{[^:]+}}: memref<8xf32>, %{{[^:]+}}: memref<8xf32>)
// CHECK-DAG:     %[[DHF:.+]] = memref.collapse_shape %[[DH]]
// CHECK-DAG:     %[[SUMF:.+]] = memref.collapse_shape %[[SUM]]
// CHECK:         %[[STATS:.+]] = memref.alloc() : memref<8xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         scf.parallel
// CHECK-NOT:       memref.store %{{.*}}, %[[SUMF]]
// CHECK:           memref.store %{{.*}}, %[[STATS]]
// CHECK:           memref.store %{{.*}}, %[[STATS]]
// CHECK:           scf.for
// CHECK:             memref.load %[[DHF]]
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}}, %[[SUMF]]
// CHECK:         scf.parallel
// CHECK-NOT:       memref.store %{{.*}}, %[[SUMF]]
// CHECK:           memref.load %[[STATS]]
// CHECK:         memref.dealloc %[[STATS]]
// CHECK:         return
module @kernels {
  func.func @k3_layer_norm_grad_to_add(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>, %dh: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %sum = tg.add %dh, %dx : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    return %sum, %dw, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Kernels already on memrefs are left alone.
// CHECK-LABEL: func.func @k2_done(%{{.+}}: memref<4xf32>, %{{.+}}: memref<4xf32>) {
// CHECK-NEXT:    return
module @kernels {
  func.func @k2_done(%a: memref<4xf32>, %b: memref<4xf32>) {
    return
  }
}

// -----

// RoPE: a row is a position. By default (the CPU: a row runs on one thread)
// the position's cosines and sines are computed once, then every plane's
// row at that position is loaded, rotated and stored as one vector. With
// vector-rows=false (the CUDA target, whose row loops go over a warp's
// lanes) a loop over the pairs: each pair's rotation, then that pair of
// every plane, one element at a time.
// CHECK-LABEL: func.func @k4_rope(
// CHECK:         scf.parallel
// CHECK-COUNT-4:   math.cos
// CHECK:           vector.from_elements {{.*}} : vector<4xf32>
// CHECK:           vector.from_elements {{.*}} : vector<4xf32>
// CHECK:           scf.for
// CHECK:             vector.load {{.*}} : memref<240xf32>, vector<8xf32>
// CHECK:             vector.store {{.*}} : memref<240xf32>, vector<8xf32>
// SCALAR-LABEL: func.func @k4_rope(
// SCALAR:         scf.parallel
// SCALAR:           scf.for
// SCALAR:             math.cos
// SCALAR:             math.sin
// SCALAR:             scf.for
// SCALAR-COUNT-2:       memref.load {{.*}} : memref<240xf32>
// SCALAR-COUNT-2:       memref.store {{.*}} : memref<240xf32>
// SCALAR-NOT:       vector.
// SCALAR:         return
module @kernels {
  func.func @k4_rope(%x: tensor<2x3x5x8xf32>) -> tensor<2x3x5x8xf32> {
    %y = tg.rope %x {theta = 1.0e+04 : f64} : tensor<2x3x5x8xf32>
    return %y : tensor<2x3x5x8xf32>
  }
}

// -----

// A rope with the heads' transpose before it (tg-fuse-into-rows): one row
// loop reading plane p = (b, h)'s row t at token (b, t), head h of the
// input, ((b * T + t) * H + h) * D, and writing it at (p * T + t) * D; no
// buffer for the transposed heads.
// CHECK-LABEL: func.func @k5_transpose_to_rope(
// CHECK-NOT:     memref.alloc
// CHECK:         scf.parallel (%[[T:.+]]) =
// CHECK:           scf.for %[[P:.+]] =
// CHECK:             %[[B:.+]] = arith.divui %[[P]], %c3
// CHECK:             %[[H:.+]] = arith.remui %[[P]], %c3
// CHECK:             %[[BT:.+]] = arith.muli %[[B]], %c5
// CHECK:             %[[TOKEN:.+]] = arith.addi %[[BT]], %[[T]]
// CHECK:             %[[TH:.+]] = arith.muli %[[TOKEN]], %c3
// CHECK:             %[[IN:.+]] = arith.addi %[[TH]], %[[H]]
// CHECK:             arith.muli %[[IN]], %c8
// CHECK:             vector.load
// CHECK:             vector.store
// CHECK-NOT:     tg.
// CHECK:         return
// SCALAR-LABEL: func.func @k5_transpose_to_rope(
// SCALAR-NOT:     memref.alloc
// SCALAR:         scf.parallel
// SCALAR:           scf.for
// SCALAR:             scf.for
// SCALAR:               arith.divui
// SCALAR:               arith.remui
// SCALAR-COUNT-2:       memref.load {{.*}} : memref<240xf32>
// SCALAR-COUNT-2:       memref.store {{.*}} : memref<240xf32>
module @kernels {
  func.func @k5_transpose_to_rope(%x: tensor<2x5x3x8xf32>) -> tensor<2x3x5x8xf32> {
    %t = tg.transpose %x [0, 2, 1, 3] : tensor<2x5x3x8xf32> -> tensor<2x3x5x8xf32>
    %r = tg.rope %t {theta = 1.0e+04 : f64} : tensor<2x3x5x8xf32>
    return %r : tensor<2x3x5x8xf32>
  }
}

// -----

// A flash group (tg-fuse-attention-layouts): q, k and v read where the
// fused projection [B, T, 3 x H x D] holds them (plane (b, h) of k from
// element 16 + h * 8, rows 48 apart; v from 32), the result written in the
// tokens' layout: no buffer, copy or transpose for the heads.
// CHECK-LABEL: func.func @k8_flash_attention(%arg0: memref<1x4x48xf32>, %arg1: memref<1x4x2x8xf32>, %arg2: memref<1x2x4xf32>)
// CHECK-NOT:     memref.alloc{{[^a]}}
// CHECK-NOT:     linalg.
// CHECK:         %[[QKV:.+]] = memref.collapse_shape %arg0 {{.*}} into memref<192xf32>
// CHECK:         %[[O:.+]] = memref.collapse_shape %arg1 {{.*}} into memref<64xf32>
// CHECK:         scf.parallel
// CHECK:           %[[KH:.+]] = arith.addi %c16{{.*}}, %{{.+}} : index
// CHECK:           %[[VH:.+]] = arith.addi %c32{{.*}}, %{{.+}} : index
// CHECK:           arith.muli %{{.+}}, %c48{{.*}} : index
// CHECK:           memref.load %[[QKV]][%{{.+}}] : memref<192xf32>
// CHECK:           memref.store %{{.+}}, %[[O]][%{{.+}}] : memref<64xf32>
// CHECK-NOT:     memref.alloc{{[^a]}}
// CHECK-NOT:     linalg.
// CHECK:         return
module @kernels {
  func.func @k8_flash_attention(%qkv: tensor<1x4x48xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x4xf32>) {
    %qs = tg.slice %qkv[[0, 0, 0]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    %qr = tg.reshape %qs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
    %q = tg.transpose %qr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    %ks = tg.slice %qkv[[0, 0, 16]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    %kr = tg.reshape %ks : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
    %k = tg.transpose %kr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    %vs = tg.slice %qkv[[0, 0, 32]] [[1, 4, 16]] : tensor<1x4x48xf32> -> tensor<1x4x16xf32>
    %vr = tg.reshape %vs : tensor<1x4x16xf32> -> tensor<1x4x2x8xf32>
    %v = tg.transpose %vr [0, 2, 1, 3] : tensor<1x4x2x8xf32> -> tensor<1x2x4x8xf32>
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
    %ot = tg.transpose %o [0, 2, 1, 3] : tensor<1x2x4x8xf32> -> tensor<1x4x2x8xf32>
    return %ot, %l : tensor<1x4x2x8xf32>, tensor<1x2x4xf32>
  }
}

// -----

// Flash attention: one task per block of 16 query rows of a plane (1 batch
// x 2 heads x 2 blocks of 20 rows); the block's queries are transposed into
// stack scratch (8 columns of 16 lanes) beside its f64 output columns; a
// tile's 16 key positions get one score vector each, summed over the head
// dim by broadcast FMAs.
// CHECK-LABEL: func.func @k9_flash
// CHECK:         scf.parallel (%{{.+}}) = (%{{.+}}) to (%[[TASKS:.+]]) step
// CHECK:           %[[QUERIES:.+]] = memref.alloca() : memref<128xf32>
// CHECK:           vector.store %{{.+}}, %[[QUERIES]][%{{.+}}] : memref<128xf32>, vector<16xf32>
// CHECK:           %[[OUTPUT:.+]] = memref.alloca() : memref<128xf64>
// CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf64>)
// CHECK:             scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:               vector.load %[[QUERIES]]
// CHECK:               vector.broadcast %{{.+}} : f32 to vector<16xf32>
// CHECK:               math.fma
// CHECK:             math.exp %{{.+}} : vector<16xf32>
// CHECK:             vector.store %{{.+}}, %[[OUTPUT]]
module @kernels {
  func.func @k9_flash(%q: tensor<1x2x20x8xf32>, %k: tensor<1x1x20x8xf32>, %v: tensor<1x1x20x8xf32>) -> (tensor<1x2x20x8xf32>, tensor<1x2x20xf32>) {
    %o, %l = tg.flash_attention %q, %k, %v {scale = 0.35 : f64} : tensor<1x2x20x8xf32>, tensor<1x1x20x8xf32>, tensor<1x1x20x8xf32> -> tensor<1x2x20x8xf32>, tensor<1x2x20xf32>
    return %o, %l : tensor<1x2x20x8xf32>, tensor<1x2x20xf32>
  }
}

// -----

// Softmax rows. The CPU stores the exponentials, sums them back and divides
// them in place: four loops over the row after the max. With
// vector-rows=false (the CUDA target) the max and the sum of exponentials
// are one fold (tg.max_sum_exp: a pair of iter_args, the sum in f64, each
// element joined with one exponential), the exponentials are computed again
// in the last loop, and the result row is written once: two loops.
// CHECK-LABEL: func.func @k5_softmax(
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32)
// CHECK:             arith.maximumf
// CHECK:           scf.for
// CHECK:             math.exp
// CHECK:             memref.store
// CHECK:           scf.for {{.*}} -> (f64)
// CHECK-NOT:         math.exp
// CHECK:           scf.for
// CHECK:             memref.load
// CHECK:             arith.divf
// CHECK:             memref.store
// SCALAR-LABEL: func.func @k5_softmax(
// SCALAR:         scf.parallel
// SCALAR:           %[[FOLD:.*]]:2 = scf.for {{.*}} iter_args(%[[MAX:.*]] = %{{.*}}, %[[SUM:.*]] = %{{.*}}) -> (f32, f64)
// SCALAR-NOT:         memref.store
// SCALAR:             %[[X:.*]] = memref.load
// SCALAR:             %[[LARGER:.*]] = arith.cmpf ogt, %[[X]], %[[MAX]] : f32
// SCALAR:             math.exp
// SCALAR:             %[[WIDE:.*]] = arith.extf
// SCALAR:             arith.mulf %[[SUM]], %[[WIDE]] : f64
// SCALAR:             arith.addf %[[SUM]], %[[WIDE]] : f64
// SCALAR:             %[[NEXT:.*]] = arith.maximumf %[[MAX]], %[[X]] : f32
// SCALAR:             arith.select %[[LARGER]]
// SCALAR:           } {tg.max_sum_exp}
// SCALAR-NOT:       scf.for {{.*}} -> (f64)
// SCALAR:           scf.for
// SCALAR:             math.exp
// SCALAR:             arith.divf
// SCALAR:             memref.store
// SCALAR-NOT:     memref.store
// SCALAR:         return
module @kernels {
  func.func @k5_softmax(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %y = tg.softmax %x : tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}

// -----

// The embedding's gradient: the table zeroed, then row tasks of spans of
// vocabulary rows (100 rows: at most 64 tasks on the CPU, 50 of 2 rows; 100 of 1 in
// the CUDA form), each scanning every token in order (tg.in_order), a block
// at a time (16 tokens on the CPU: one block): a fold counts the block's
// tokens in the span, then, as many times, a fold finds the next one (the
// least position after the last) and its gradient row (16 elements) is added.
// CHECK-LABEL: func.func @k0_embedding_grad(
// CHECK: linalg.fill
// CHECK: scf.parallel (%[[TASK:.*]]) = (%c0{{.*}}) to (%c50) step
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step %c1
// CHECK:   scf.for %{{.*}} iter_args(%{{.*}}) -> (f64)
// CHECK:     arith.select
// CHECK:   scf.for %{{.*}} iter_args(%{{.*}}) -> (index)
// CHECK:     scf.for %{{.*}} iter_args(%{{.*}}) -> (f64)
// CHECK:       arith.minimumf
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1
// CHECK:   } {tg.in_order}
// CHECK: } {tg.in_order}
// SCALAR-LABEL: func.func @k0_embedding_grad(
// SCALAR: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c100) step
// SCALAR: } {tg.in_order}
// SCALAR: } {tg.in_order}
module @kernels {
  func.func @k0_embedding_grad(%ids: tensor<2x8xi32>, %g: tensor<2x8x16xf32>) -> tensor<100x16xf32> {
    %0 = tg.embedding_grad %ids, %g : tensor<2x8xi32>, tensor<2x8x16xf32> -> tensor<100x16xf32>
    return %0 : tensor<100x16xf32>
  }
}

// -----

// The loss with its gradient and the casts around it (bf16 logits, f32
// loss): each logit is widened as it is read and each gradient element
// narrowed once as it is written (the probability scaled by the loss's
// gradient over the rows; the target's element again from its
// probability); no f32 copy of the logits or of the gradient, only the
// rows' losses are a local buffer. The CPU form does not store the
// exponentials into a bf16 gradient either.
// CHECK-LABEL: func.func @k0_loss_with_casts(
// CHECK-SAME: %[[L:.*]]: memref<4x10xbf16>, %{{.*}}: memref<4xi64>, %[[G:.*]]: memref<4x10xbf16>, %{{.*}}: memref<f32>)
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.mulf
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %alloc
// CHECK: arith.divf
// CHECK: arith.subf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: memref<4x10xf32>
// SCALAR-LABEL: func.func @k0_loss_with_casts(
// SCALAR-NOT: memref<4x10xf32>
module @kernels {
  func.func @k0_loss_with_casts(%l: tensor<4x10xbf16>, %t: tensor<4xi64>) -> (tensor<4x10xbf16>, tensor<f32>) {
    %seed = tg.constant dense<1.0> : tensor<f32>
    %w = tg.cast %l : tensor<4x10xbf16> -> tensor<4x10xf32>
    %loss = tg.cross_entropy %w, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    %g = tg.cross_entropy_grad %w, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    %n = tg.cast %g : tensor<4x10xf32> -> tensor<4x10xbf16>
    return %n, %loss : tensor<4x10xbf16>, tensor<f32>
  }
}

// -----

// The loss alone (an eval step's): each row's loss in a row loop, kept in a
// local buffer, then the buffer summed in row order in f64: the rows run on
// the CPU's threads and a GPU's warps, not in one sequential fold. The CUDA
// form folds a row's max and sum of exponentials in one pass.
// CHECK-LABEL: func.func @k0_loss(
// CHECK: %[[ROWS:.*]] = memref.alloc() : memref<4xf32>
// CHECK: scf.parallel (%[[R:.*]]) =
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: memref.store %{{.*}}, %[[ROWS]][%[[R]]] : memref<4xf32>
// CHECK: scf.reduce
// CHECK: scf.for {{.*}} -> (f64)
// CHECK: memref.load %[[ROWS]]
// CHECK: memref.dealloc %[[ROWS]]
// SCALAR-LABEL: func.func @k0_loss(
// SCALAR: scf.parallel
// SCALAR: scf.for {{.*}} -> (f32, f64)
// SCALAR: } {tg.max_sum_exp}
// SCALAR-NOT: scf.for {{.*}} -> (f64)
// SCALAR: memref.store
// SCALAR: scf.reduce
module @kernels {
  func.func @k0_loss(%w: tensor<4x10xf32>, %t: tensor<4xi64>) -> tensor<f32> {
    %loss = tg.cross_entropy %w, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A loss gradient written in f32 keeps the exact exponential and division
// in the CUDA form too: their error would show there.
// SCALAR-LABEL: func.func @k0_f32_loss_gradient(
// SCALAR-NOT: tg.for_half_floats
// SCALAR: math.exp %{{[0-9a-z_]+}} : f32
// SCALAR: arith.divf %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : f32
// SCALAR-NOT: tg.for_half_floats
// SCALAR: return
module @kernels {
  func.func @k0_f32_loss_gradient(%w: tensor<4x10xf32>, %t: tensor<4xi64>, %seed: tensor<f32>) -> tensor<4x10xf32> {
    %g = tg.cross_entropy_grad %w, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    return %g : tensor<4x10xf32>
  }
}

// -----

// The same through rows padded to 16 for their GEMMs: the logits read at
// row x 16 from the padded buffer, the gradient written at row x 16, each
// row's last 6 elements zeros.
// CHECK-LABEL: func.func @k0_loss_through_padded_rows(
// CHECK-SAME: %[[L:.*]]: memref<4x16xbf16>, %{{.*}}: memref<4xi64>, %[[G:.*]]: memref<4x16xbf16>, %{{.*}}: memref<f32>)
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel (%[[R:.*]]) =
// CHECK: %[[BASE:.*]] = arith.muli %[[R]], %c16
// CHECK: arith.muli %[[R]], %c16
// CHECK-NOT: tg.for_half_floats
// CHECK: %[[PAD:.*]] = arith.addi %[[BASE]], %c10
// CHECK: scf.for %[[I:.*]] = %c0{{.*}} to %c6
// CHECK: %[[AT:.*]] = arith.addi %[[PAD]], %[[I]]
// CHECK: %[[ZERO:.*]] = arith.truncf %cst{{.*}} : f32 to bf16
// CHECK: memref.store %[[ZERO]], %{{.*}}[%[[AT]]] : memref<64xbf16>
// In the CUDA form the probabilities written to the bf16 gradient take the
// fast exponential and division (tg.for_half_floats); the row's max and sum,
// which the loss is computed from, and the target's probability stay exact,
// and so does everything on the CPU (above).
// SCALAR-LABEL: func.func @k0_loss_through_padded_rows(
// SCALAR-NOT: tg.for_half_floats
// SCALAR: } {tg.max_sum_exp}
// SCALAR: %[[E:.*]] = math.exp %{{.*}} {tg.for_half_floats} : f32
// SCALAR-NEXT: %[[P:.*]] = arith.divf %[[E]], %{{.*}} {tg.for_half_floats} : f32
// SCALAR: %[[TE:.*]] = math.exp %{{[0-9a-z_]+}} : f32
// SCALAR-NEXT: arith.divf %[[TE]], %{{[0-9a-z_#]+}} : f32
module @kernels {
  func.func @k0_loss_through_padded_rows(%lp: tensor<4x16xbf16>, %t: tensor<4xi64>) -> (tensor<4x16xbf16>, tensor<f32>) {
    %seed = tg.constant dense<1.0> : tensor<f32>
    %l = tg.slice %lp[[0, 0]] [[4, 10]] : tensor<4x16xbf16> -> tensor<4x10xbf16>
    %w = tg.cast %l : tensor<4x10xbf16> -> tensor<4x10xf32>
    %loss = tg.cross_entropy %w, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    %g = tg.cross_entropy_grad %w, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    %n = tg.cast %g : tensor<4x10xf32> -> tensor<4x10xbf16>
    %p = tg.pad %n low [0, 0] high [0, 6] : tensor<4x10xbf16> -> tensor<4x16xbf16>
    return %p, %loss : tensor<4x16xbf16>, tensor<f32>
  }
}

// -----

// A bias gradient's column sums (over 64 rows into 32 columns): on the CPU
// a row task per block of 32 columns, vectors of them summed along the rows;
// in the CUDA form a task per block of 8 columns (16 bytes of bf16), marked
// tg.thread_rows (a thread each, so adjacent lanes read adjacent blocks),
// folding its block's 8 sums.
// CHECK-LABEL: func.func @k6_reduce_sum(
// CHECK:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step
// CHECK:           %{{.*}}:32 = scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{.*}} iter_args(
// CHECK-NOT:     tg.thread_rows
// SCALAR-LABEL: func.func @k6_reduce_sum(
// SCALAR:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c4{{.*}}) step
// SCALAR:           scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (f64, f64, f64, f64, f64, f64, f64, f64)
// SCALAR:         } {tg.thread_rows}
module @kernels {
  func.func @k6_reduce_sum(%g: tensor<64x32xf32>) -> tensor<32xf32> {
    %0 = tg.reduce_sum %g [0] : tensor<64x32xf32> -> tensor<32xf32>
    return %0 : tensor<32xf32>
  }
}

// -----

// A column sum in the group (tg-fuse-into-rows): the residual gradient's
// rows, stored by the row pass, are summed by the column pass with dw and
// db, three sums a column (a block of 8 columns a task, on the CPU and for
// CUDA: 24 sums), not by a pass of their own.
// CHECK-LABEL: func.func @k9_layer_norm_grad_to_reduce_sum(
// CHECK-SAME:      %[[BIAS:[^:]+]]: memref<1x1x8xf32>, %[[SUM:[^:]+]]: memref<2x4x8xf32>, %{{[^:]+}}: memref<8xf32>, %{{[^:]+}}: memref<8xf32>)
// CHECK-DAG:     %[[SUMF:.+]] = memref.collapse_shape %[[SUM]]
// CHECK-DAG:     %[[BIASF:.+]] = memref.collapse_shape %[[BIAS]]
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %[[SUMF]]
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
// CHECK:             memref.load %[[SUMF]]
// CHECK:           memref.store %{{.*}}, %[[BIASF]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
// SCALAR-LABEL: func.func @k9_layer_norm_grad_to_reduce_sum(
// SCALAR:         scf.parallel
// SCALAR:         scf.parallel
// SCALAR:           scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
// SCALAR:         } {tg.row_local_columns, tg.thread_rows}
// SCALAR-NOT:     scf.parallel
// SCALAR:         return
module @kernels {
  func.func @k9_layer_norm_grad_to_reduce_sum(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>, %dh: tensor<2x4x8xf32>) -> (tensor<1x1x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %sum = tg.add %dh, %dx : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %bias = tg.reduce_sum %sum [0, 1] {keep_dims = true} : tensor<2x4x8xf32> -> tensor<1x1x8xf32>
    return %bias, %sum, %dw, %db : tensor<1x1x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// A group of a norm gradient and a column sum of its dx alone (no
// epilogue: the final norm's dx, summed into the last projection's bias
// gradient): dx is stored by the row pass and summed by the column pass
// with dw. A sum whose rows the kernel does not return is no group: each
// op then runs on its own, the sum a pass of its own.
// CHECK-LABEL: func.func @k10_rms_norm_grad_to_reduce_sum(
// CHECK-SAME:      %{{[^:]+}}: memref<4x8xf32>, %{{[^:]+}}: memref<8xf32>, %{{[^:]+}}: memref<4x8xf32>, %[[SUMS:[^:]+]]: memref<8xf32>, %[[DX:[^:]+]]: memref<4x8xf32>, %{{[^:]+}}: memref<8xf32>)
// CHECK:         %[[DXF:.+]] = memref.collapse_shape %[[DX]]
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %[[DXF]]
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
// CHECK:             memref.load %[[DXF]]
// CHECK:           memref.store %{{.*}}, %[[SUMS]]
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func @k11_rms_norm_grad_to_reduce_sum(
// CHECK:         memref.alloc() : memref<4x8xf32>
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         return
module @kernels {
  func.func @k10_rms_norm_grad_to_reduce_sum(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    %s = tg.reduce_sum %dx [0] : tensor<4x8xf32> -> tensor<8xf32>
    return %s, %dx, %dw : tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>
  }
  func.func @k11_rms_norm_grad_to_reduce_sum(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    %s = tg.reduce_sum %dx [0] : tensor<4x8xf32> -> tensor<8xf32>
    return %s, %dw : tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// layer_norm_grad's weight and bias gradients in the CUDA form: a block of
// 8 columns a task (tg.thread_rows), here the one block, its 16 sums
// together; each iteration reads only its own row (tg.row_local_columns),
// which a bias gradient's sums (above) do not say.
// SCALAR-LABEL: func.func @k7_layer_norm_grad(
// SCALAR:         scf.parallel
// SCALAR-NOT:     tg.thread_rows
// SCALAR:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step
// SCALAR:           scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args({{.*}}) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64)
// SCALAR:         } {tg.row_local_columns, tg.thread_rows}
module @kernels {
  func.func @k7_layer_norm_grad(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    return %dx, %dw, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
