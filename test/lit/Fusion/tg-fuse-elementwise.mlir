// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-elementwise))' | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-elementwise{remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// A kernel reads at most max-inputs buffers (the chain above reads %p, %m, %g).
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-elementwise{remarks=true max-inputs=2}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: remark: not fused into the kernel of 'tg.sub': the kernel would read 3 buffers, more than max-inputs (2): a GPU kernel's parameters are limited

// An AdamW-like chain: every elementwise region of one shape ends up in the
// last one; values read afterwards (the new moment %m1, also returned)
// become results of the merged region; splat constants are compiled in,
// once each.
// CHECK-LABEL: func.func @chain
// CHECK-NOT: tg.constant
// CHECK: %[[R:.*]]:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-DAG: %[[C:.*]] = tg.constant dense<0.899999976> : tensor<f32>
// CHECK-DAG: %[[H:.*]] = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK-DAG: %[[A:.*]] = tg.mul %arg1, %[[C]]
// CHECK-DAG: %[[B:.*]] = tg.mul %arg2, %[[H]]
// CHECK: %[[M:.*]] = tg.add %[[A]], %[[B]]
// CHECK: %[[S:.*]] = tg.mul %[[M]], %[[H]]
// CHECK: %[[P:.*]] = tg.sub %arg0, %[[S]]
// CHECK: exec.yield %[[P]], %[[M]]
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[R]]#0, %[[R]]#1
// REMARK: remark: fused into the kernel of 'tg.add': saves writing and reading 128 bytes
func.func @chain(%p: tensor<4x8xf32>, %m: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %beta = tg.constant dense<0.9> : tensor<f32>
  %half = tg.constant dense<0.5> : tensor<f32>
  %a = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %m, %beta : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %b = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %g, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %m1 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %s = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %m1, %half : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %p1 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.sub %p, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %p1, %m1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What must not fuse: a scalar broadcast into a larger consumer (it would be
// recomputed per element), a producer that is not elementwise (softmax), a
// producer something reads before the consumer runs, and a bias add of a
// library GEMM's product (the GEMM's epilogue).
// CHECK-LABEL: func.func @refused
// CHECK: exec.dispatch_region -> (tensor<f32>) {
// CHECK-NEXT: tg.exp
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.softmax
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.neg
// CHECK: tg.reduce_sum
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.mul
// CHECK-NEXT: tg.add
// CHECK-NEXT: exec.yield
// CHECK: tg.matmul
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.add
// CHECK-NEXT: exec.yield
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.gelu
// REMARK: remark: not fused into the kernel of 'tg.mul': it is not elementwise
// REMARK: remark: not fused into the kernel of 'tg.mul': it would be recomputed 32 times (1 elements broadcast to 32), where its own kernel computes each element once
// REMARK: remark: not fused into the kernel of 'tg.add': 'tg.reduce_sum' reads it before that kernel runs
// REMARK: remark: not fused into the kernel of 'tg.gelu': it is a bias add of a GEMM's product, left to exec-fuse-gemm-bias as the GEMM's epilogue
func.func @refused(%x: tensor<4x8xf32>, %s: tensor<f32>, %w: tensor<8x8xf32>, %bias: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %e = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.exp %s : tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %sm = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.softmax %x : tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %n = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.neg %x : tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %r = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.reduce_sum %n [1] : tensor<4x8xf32> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  %y = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %sm, %e : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    %1 = tg.add %0, %n : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %1 : tensor<4x8xf32>
  }
  %mm = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %mm, %bias : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %gl = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.gelu %b tanh : tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %y, %r, %gl : tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>
}

// -----

// A bf16 gradient cast to f32 that two elementwise kernels read (the squares
// of the gradient norm, then the AdamW update, with a reduction between
// them) joins neither as it is; each gets a copy of the cast, which it
// absorbs: both read the 2-byte gradient, and the 4-byte one is never
// stored. A cast that a reduction reads directly is left alone, and so is
// one whose copies would move more bytes (f32 to bf16 read by three:
// 3 x 4 >= 4 + 2 + 3 x 2).
// CHECK-LABEL: func.func @cast_copied_into_readers
// CHECK: %[[SQ:.*]] = exec.dispatch_region -> (tensor<1024xf32>) {
// CHECK-NEXT: %[[C1:.*]] = tg.cast %arg0 : tensor<1024xbf16> -> tensor<1024xf32>
// CHECK-NEXT: tg.mul %[[C1]], %[[C1]]
// CHECK: tg.reduce_sum %[[SQ]]
// CHECK: exec.dispatch_region -> (tensor<1024xf32>) {
// CHECK-NEXT: %[[C2:.*]] = tg.cast %arg0 : tensor<1024xbf16> -> tensor<1024xf32>
// CHECK: tg.sub %arg1, %{{.*}}
// CHECK-NOT: tg.cast
// REMARK: remark: copied into its 2 readers' kernels: saves writing 4096 bytes and reading 8192, for reading 2048 more
func.func @cast_copied_into_readers(%g: tensor<1024xbf16>, %p: tensor<1024xf32>, %lr: tensor<f32>) -> (tensor<f32>, tensor<1024xf32>) {
  %g32 = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.cast %g : tensor<1024xbf16> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  %sq = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.mul %g32, %g32 : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  %norm = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.reduce_sum %sq [0] : tensor<1024xf32> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %step = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.mul %g32, %lr : tensor<1024xf32>, tensor<f32> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  %p1 = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.sub %p, %step : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  return %norm, %p1 : tensor<f32>, tensor<1024xf32>
}

// -----

// CHECK-LABEL: func.func @cast_kept
// CHECK: %[[G:.*]] = exec.dispatch_region -> (tensor<1024xf32>) {
// CHECK-NEXT: tg.cast %arg0
// CHECK-NEXT: exec.yield
// CHECK: tg.reduce_sum %[[G]]
// CHECK: tg.add %[[G]], %[[G]]
// CHECK: tg.cast %arg1
// CHECK-NOT: tg.cast
func.func @cast_kept(%g: tensor<1024xbf16>, %w: tensor<1024xf32>, %x: tensor<1024xbf16>) -> (tensor<f32>, tensor<1024xf32>, tensor<1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>) {
  %g32 = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.cast %g : tensor<1024xbf16> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  %norm = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.reduce_sum %g32 [0] : tensor<1024xf32> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %twice = exec.dispatch_region -> (tensor<1024xf32>) {
    %0 = tg.add %g32, %g32 : tensor<1024xf32>, tensor<1024xf32> -> tensor<1024xf32>
    exec.yield %0 : tensor<1024xf32>
  }
  %w16 = exec.dispatch_region -> (tensor<1024xbf16>) {
    %0 = tg.cast %w : tensor<1024xf32> -> tensor<1024xbf16>
    exec.yield %0 : tensor<1024xbf16>
  }
  %a = exec.dispatch_region -> (tensor<1024xbf16>) {
    %0 = tg.add %w16, %x : tensor<1024xbf16>, tensor<1024xbf16> -> tensor<1024xbf16>
    exec.yield %0 : tensor<1024xbf16>
  }
  %b = exec.dispatch_region -> (tensor<1024xbf16>) {
    %0 = tg.mul %w16, %x : tensor<1024xbf16>, tensor<1024xbf16> -> tensor<1024xbf16>
    exec.yield %0 : tensor<1024xbf16>
  }
  %c = exec.dispatch_region -> (tensor<1024xbf16>) {
    %0 = tg.sub %w16, %x : tensor<1024xbf16>, tensor<1024xbf16> -> tensor<1024xbf16>
    exec.yield %0 : tensor<1024xbf16>
  }
  return %norm, %twice, %a, %b, %c : tensor<f32>, tensor<1024xf32>, tensor<1024xbf16>, tensor<1024xbf16>, tensor<1024xbf16>
}
