// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-into-rows))' | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-into-rows{remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-into-rows{remarks=true max-inputs=2}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-into-rows{loss-with-gradient=false}))' | FileCheck %s --check-prefix=NOLOSS

// A pre-norm block's residual add joins the norm's row kernel as its
// prologue; the sum is still a result (the residual stream reads it later).
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: %[[R:.*]]:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: %[[S:.*]] = tg.add %arg0, %arg1
// CHECK-NEXT: %[[Y:.*]] = tg.layer_norm %[[S]], %arg2, %arg3
// CHECK-NEXT: exec.yield %[[Y]], %[[S]]
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[R]]#0, %[[R]]#1
// REMARK: remark: fused into the row kernel of 'tg.layer_norm' as its prologue: saves reading 128 bytes back (it is still written: read later)
// LIMIT: remark: not fused into the row kernel of 'tg.layer_norm': the kernel would read 4 buffers, more than max-inputs (2): a GPU kernel's parameters are limited
func.func @residual_layer_norm(%h: tensor<4x8xf32>, %a: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %h, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %y = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.layer_norm %s, %w, %b {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Attention's scale and broadcast causal mask join the softmax; the masked
// scores are read by nothing else, so they are never written.
// CHECK-LABEL: func.func @scale_mask_softmax
// CHECK: %[[P:.*]] = exec.dispatch_region -> (tensor<2x3x5x5xf32>) {
// CHECK: tg.mul
// CHECK: tg.add
// CHECK: %[[Y:.*]] = tg.softmax
// CHECK-NEXT: exec.yield %[[Y]] :
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[P]]
// REMARK: remark: fused into the row kernel of 'tg.softmax' as its prologue: saves writing and reading 600 bytes
func.func @scale_mask_softmax(%scores: tensor<2x3x5x5xf32>, %mask: tensor<5x5xf32>) -> tensor<2x3x5x5xf32> {
  %masked = exec.dispatch_region -> (tensor<2x3x5x5xf32>) {
    %c = tg.constant dense<0.5> : tensor<f32>
    %0 = tg.mul %scores, %c : tensor<2x3x5x5xf32>, tensor<f32> -> tensor<2x3x5x5xf32>
    %1 = tg.add %0, %mask : tensor<2x3x5x5xf32>, tensor<5x5xf32> -> tensor<2x3x5x5xf32>
    exec.yield %1 : tensor<2x3x5x5xf32>
  }
  %p = exec.dispatch_region -> (tensor<2x3x5x5xf32>) {
    %0 = tg.softmax %masked : tensor<2x3x5x5xf32>
    exec.yield %0 : tensor<2x3x5x5xf32>
  }
  return %p : tensor<2x3x5x5xf32>
}

// -----

// The norm gradient's dx goes through the residual gradient's add as it is
// computed: one region yields the sum, then the weight and bias gradients.
// CHECK-LABEL: func.func @layer_norm_grad_residual
// CHECK: %[[R:.*]]:3 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = tg.layer_norm_grad %arg0, %arg1, %arg2
// CHECK-NEXT: %[[SUM:.*]] = tg.add %arg3, %[[DX]]
// CHECK-NEXT: exec.yield %[[SUM]], %[[DW]], %[[DB]]
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2
// REMARK: remark: dx fused into its consumer as an epilogue: saves writing and reading 128 bytes
func.func @layer_norm_grad_residual(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>, %dh: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %g:3 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
    exec.yield %dx, %dw, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
  %sum = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %dh, %g#0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %sum, %g#1, %g#2 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The bias gradient of the projection before the residual add sums the
// residual gradient's rows: its region moves up and joins the norm
// gradient's, whose column pass sums them beside dw and db. The GEMM-like
// reader in between still reads the rows, which the kernel stores.
// CHECK-LABEL: func.func @layer_norm_grad_bias_sum
// CHECK: %[[R:.*]]:4 = exec.dispatch_region -> (tensor<1x1x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = tg.layer_norm_grad %arg0, %arg1, %arg2
// CHECK-NEXT: %[[SUM:.*]] = tg.add %arg3, %[[DX]]
// CHECK-NEXT: %[[BIAS:.*]] = tg.reduce_sum %[[SUM]] [0, 1]
// CHECK-NEXT: exec.yield %[[BIAS]], %[[SUM]], %[[DW]], %[[DB]]
// CHECK: %[[READ:.*]] = exec.dispatch_region
// CHECK-NEXT: tg.matmul %[[R]]#1
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[READ]], %[[R]]#2, %[[R]]#3, %[[R]]#0
// REMARK: remark: fused into the column pass of 'tg.layer_norm_grad', which reads the 256 bytes of rows it sums: a kernel fewer
func.func @layer_norm_grad_bias_sum(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>, %dh: tensor<2x4x8xf32>, %m: tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1x1x8xf32>) {
  %g:3 = exec.dispatch_region -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) {
    %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    exec.yield %dx, %dw, %db : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  }
  %sum = exec.dispatch_region -> (tensor<2x4x8xf32>) {
    %0 = tg.add %dh, %g#0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    exec.yield %0 : tensor<2x4x8xf32>
  }
  %read = exec.dispatch_region -> (tensor<2x4x8xf32>) {
    %0 = tg.matmul %sum, %m : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
    exec.yield %0 : tensor<2x4x8xf32>
  }
  %bias = exec.dispatch_region -> (tensor<1x1x8xf32>) {
    %0 = tg.reduce_sum %sum [0, 1] {keep_dims = true} : tensor<2x4x8xf32> -> tensor<1x1x8xf32>
    exec.yield %0 : tensor<1x1x8xf32>
  }
  return %read, %g#1, %g#2, %bias : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<1x1x8xf32>
}

// -----

// Not column sums to fuse: rows that nothing but the sums read (the kernel
// would store them for the sums alone; two sums, as autodiff may leave
// them, one keeping its dims).
// CHECK-LABEL: func.func @rows_read_by_the_sums_alone
// CHECK-COUNT-3: exec.dispatch_region
// CHECK-NOT: exec.dispatch_region
// REMARK-COUNT-2: remark: not fused into the column pass of 'tg.rms_norm_grad': nothing else reads the rows, which the kernel would store for the sums alone
func.func @rows_read_by_the_sums_alone(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<1x8xf32>) {
  %g:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
  }
  %cols = exec.dispatch_region -> (tensor<8xf32>) {
    %0 = tg.reduce_sum %g#0 [0] : tensor<4x8xf32> -> tensor<8xf32>
    exec.yield %0 : tensor<8xf32>
  }
  %kept = exec.dispatch_region -> (tensor<1x8xf32>) {
    %0 = tg.reduce_sum %g#0 [0] {keep_dims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
    exec.yield %0 : tensor<1x8xf32>
  }
  return %g#1, %cols, %kept : tensor<8xf32>, tensor<8xf32>, tensor<1x8xf32>
}

// -----

// Not a column sum: a sum over the batch only (a position embedding's
// gradient), of rows that are returned too. No remark.
// CHECK-LABEL: func.func @sum_over_some_rows
// CHECK-COUNT-2: exec.dispatch_region
// CHECK-NOT: exec.dispatch_region
// REMARK-NOT: column pass
func.func @sum_over_some_rows(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) {
  %g:2 = exec.dispatch_region -> (tensor<2x4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<2x4x8xf32>, tensor<8xf32>
  }
  %pos = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.reduce_sum %g#0 [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %g#0, %g#1, %pos : tensor<2x4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
}

// -----

// Not a column sum at all: each row's sum (over the last dim) of a norm
// gradient's dx, which is returned too. No remark.
// CHECK-LABEL: func.func @row_sums_of_dx
// CHECK-COUNT-2: exec.dispatch_region
// CHECK-NOT: exec.dispatch_region
// REMARK-NOT: column pass
func.func @row_sums_of_dx(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>) {
  %g:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
  }
  %each = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.reduce_sum %g#0 [1] : tensor<4x8xf32> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  return %g#0, %g#1, %each : tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>
}

// -----

// dx read later as well stays a result; softmax_grad's scale is its
// epilogue too.
// CHECK-LABEL: func.func @kept_dx
// CHECK: %[[R:.*]]:3 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) {
// CHECK: tg.rms_norm_grad
// CHECK: tg.mul
// CHECK: exec.yield
// CHECK: tg.reduce_sum %[[R]]#1
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK: tg.softmax_grad
// CHECK: tg.mul
// CHECK-NEXT: exec.yield
// REMARK: remark: dx fused into its consumer as an epilogue: saves reading 128 bytes back (it is still written: read later)
// REMARK: remark: dx fused into its consumer as an epilogue: saves writing and reading 128 bytes
func.func @kept_dx(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %g:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
  }
  %scaled = exec.dispatch_region -> (tensor<4x8xf32>) {
    %c = tg.constant dense<2.0> : tensor<f32>
    %0 = tg.mul %g#0, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %r = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.reduce_sum %g#0 [1] : tensor<4x8xf32> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  %ds = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.softmax_grad %x, %dy : tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %dss = exec.dispatch_region -> (tensor<4x8xf32>) {
    %c = tg.constant dense<0.5> : tensor<f32>
    %0 = tg.mul %ds, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  return %scaled, %g#1, %r, %dss : tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4x8xf32>
}

// -----

// A sum reads its prologue element by element: the squares of a gradient
// for the global norm are never written. A product that something else
// reads too stays its own kernel (a sum's kernel stores nothing).
// CHECK-LABEL: func.func @sums
// CHECK: %[[N:.*]] = exec.dispatch_region -> (tensor<f32>) {
// CHECK-NEXT: %[[SQ:.*]] = tg.mul %arg0, %arg0
// CHECK-NEXT: %[[S:.*]] = tg.reduce_sum %[[SQ]] [0, 1]
// CHECK-NEXT: exec.yield %[[S]]
// CHECK: exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.mul %arg0, %arg1
// CHECK: exec.dispatch_region -> (tensor<8xf32>) {
// CHECK-NEXT: tg.reduce_mean
// REMARK: remark: fused into the row kernel of 'tg.reduce_sum' as its prologue: saves writing and reading 128 bytes
// REMARK: remark: not fused into the row kernel of 'tg.reduce_mean': something else reads it too, and a sum's kernel stores no element
func.func @sums(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>) -> (tensor<f32>, tensor<8xf32>, tensor<4x8xf32>) {
  %sq = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %n = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.reduce_sum %sq [0, 1] : tensor<4x8xf32> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %p = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %g, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %m = exec.dispatch_region -> (tensor<8xf32>) {
    %0 = tg.reduce_mean %p [0] : tensor<4x8xf32> -> tensor<8xf32>
    exec.yield %0 : tensor<8xf32>
  }
  return %n, %m, %p : tensor<f32>, tensor<8xf32>, tensor<4x8xf32>
}

// -----

// The ops computing a sum's input alone move into the sum's kernel, and
// what something else reads too stays: the vocabulary-parallel loss's
// exponentials of the shifted logits, which the target pick reads.
// CHECK-LABEL: func.func @partial_prologue
// CHECK: %[[SHIFT:.*]] = exec.dispatch_region -> (tensor<4x8xf32>) {
// CHECK-NEXT: tg.sub
// CHECK-NEXT: exec.yield
// CHECK: exec.dispatch_region -> (tensor<4xf32>) {
// CHECK-NEXT: %[[E:.*]] = tg.exp %[[SHIFT]]
// CHECK-NEXT: tg.reduce_sum %[[E]] [1]
// CHECK: tg.pick %[[SHIFT]]
// REMARK: remark: its ops that only the sum reads fused into the row kernel of 'tg.reduce_sum' as its prologue: saves writing and reading 128 bytes
func.func @partial_prologue(%l: tensor<4x8xf32>, %m: tensor<4x1xf32>, %t: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %both:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %0 = tg.sub %l, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %1 = tg.exp %0 : tensor<4x8xf32>
    exec.yield %1, %0 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %s = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.reduce_sum %both#0 [1] : tensor<4x8xf32> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  %p = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.pick %both#1[%t] : tensor<4x8xf32>, tensor<4xi64> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  return %s, %p : tensor<4xf32>, tensor<4xf32>
}

// -----

// The loss and its gradient (same logits and targets) in one kernel, at the
// gradient's place; the seed is compiled in. Not without loss-with-gradient
// (a target whose kernels cannot allocate the rows' losses), nor where the
// loss is read before the gradient runs.
// CHECK-LABEL: func.func @loss_with_gradient
// CHECK: %[[R:.*]]:2 = exec.dispatch_region -> (tensor<4x10xf32>, tensor<f32>) {
// CHECK-NEXT: tg.constant dense<1.000000e+00>
// CHECK-NEXT: %[[L:.*]] = tg.cross_entropy %arg0, %arg1
// CHECK-NEXT: %[[G:.*]] = tg.cross_entropy_grad %arg0, %arg1
// CHECK-NEXT: exec.yield %[[G]], %[[L]]
// CHECK: return %[[R]]#1, %[[R]]#0
// CHECK-LABEL: func.func @loss_read_first
// CHECK: tg.cross_entropy
// CHECK-NEXT: exec.yield
// CHECK: tg.exp
// REMARK: remark: computed with its gradient in one kernel: saves a pass over the logits (160 bytes)
// REMARK: remark: not computed with its gradient: 'tg.exp' reads it before that kernel runs
// NOLOSS-LABEL: func.func @loss_with_gradient
// NOLOSS: exec.dispatch_region -> (tensor<f32>) {
// NOLOSS-NEXT: tg.cross_entropy
func.func @loss_with_gradient(%l: tensor<4x10xf32>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>) {
  %seed = tg.constant dense<1.0> : tensor<f32>
  %loss = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.cross_entropy %l, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %g = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cross_entropy_grad %l, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    exec.yield %0 : tensor<4x10xf32>
  }
  return %loss, %g : tensor<f32>, tensor<4x10xf32>
}
func.func @loss_read_first(%l: tensor<4x10xf32>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>) {
  %loss = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.cross_entropy %l, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %e = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.exp %loss : tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %g = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cross_entropy_grad %l, %t, %e : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    exec.yield %0 : tensor<4x10xf32>
  }
  return %loss, %g : tensor<f32>, tensor<4x10xf32>
}

// -----

// bf16 logits: the cast widening them joins the kernel as its prologue and
// the cast narrowing the gradient as its epilogue; the f32 logits and
// gradient are never stored. A cast of logits something else also reads
// stays.
// CHECK-LABEL: func.func @loss_with_casts
// CHECK: %[[R:.*]]:2 = exec.dispatch_region -> (tensor<4x10xbf16>, tensor<f32>) {
// CHECK: %[[W:.*]] = tg.cast %arg0 : tensor<4x10xbf16> -> tensor<4x10xf32>
// CHECK: tg.cross_entropy %[[W]], %arg1
// CHECK: %[[G:.*]] = tg.cross_entropy_grad %[[W]], %arg1
// CHECK: %[[N:.*]] = tg.cast %[[G]] : tensor<4x10xf32> -> tensor<4x10xbf16>
// CHECK: exec.yield %[[N]], %{{.*}} : tensor<4x10xbf16>, tensor<f32>
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[R]]#1, %[[R]]#0
// REMARK: remark: computed with its gradient in one kernel: saves a pass over the logits (160 bytes)
// REMARK: remark: fused into the loss with its gradient, which reads through it: saves writing and reading 160 bytes
// REMARK: remark: fused into the loss with its gradient, which writes through it: saves writing and reading 160 bytes
func.func @loss_with_casts(%l: tensor<4x10xbf16>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x10xbf16>) {
  %seed = tg.constant dense<1.0> : tensor<f32>
  %w = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cast %l : tensor<4x10xbf16> -> tensor<4x10xf32>
    exec.yield %0 : tensor<4x10xf32>
  }
  %loss = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.cross_entropy %w, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %g = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cross_entropy_grad %w, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    exec.yield %0 : tensor<4x10xf32>
  }
  %n = exec.dispatch_region -> (tensor<4x10xbf16>) {
    %0 = tg.cast %g : tensor<4x10xf32> -> tensor<4x10xbf16>
    exec.yield %0 : tensor<4x10xbf16>
  }
  return %loss, %n : tensor<f32>, tensor<4x10xbf16>
}

// -----

// The CUDA target's bf16 logits with rows padded for their GEMM
// (tg-align-gemm-rows): the slice of the padded rows and the cast join the
// kernel before the pair, the cast and the pad after it.
// CHECK-LABEL: func.func @loss_through_padded_rows
// CHECK: %[[R:.*]]:2 = exec.dispatch_region -> (tensor<4x16xbf16>, tensor<f32>) {
// CHECK: tg.slice %arg0
// CHECK: tg.cast
// CHECK: tg.cross_entropy_grad
// CHECK: tg.cast
// CHECK: %[[P:.*]] = tg.pad
// CHECK: exec.yield %[[P]], %{{.*}} : tensor<4x16xbf16>, tensor<f32>
// CHECK-NOT: exec.dispatch_region
// REMARK: remark: computed with its gradient in one kernel
// REMARK-COUNT-2: remark: fused into the loss with its gradient, which reads through it
// REMARK-COUNT-2: remark: fused into the loss with its gradient, which writes through it
func.func @loss_through_padded_rows(%lp: tensor<4x16xbf16>, %t: tensor<4xi64>) -> (tensor<f32>, tensor<4x16xbf16>) {
  %seed = tg.constant dense<1.0> : tensor<f32>
  %l = exec.dispatch_region -> (tensor<4x10xbf16>) {
    %0 = tg.slice %lp[[0, 0]] [[4, 10]] : tensor<4x16xbf16> -> tensor<4x10xbf16>
    exec.yield %0 : tensor<4x10xbf16>
  }
  %w = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cast %l : tensor<4x10xbf16> -> tensor<4x10xf32>
    exec.yield %0 : tensor<4x10xf32>
  }
  %loss = exec.dispatch_region -> (tensor<f32>) {
    %0 = tg.cross_entropy %w, %t : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
    exec.yield %0 : tensor<f32>
  }
  %g = exec.dispatch_region -> (tensor<4x10xf32>) {
    %0 = tg.cross_entropy_grad %w, %t, %seed : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    exec.yield %0 : tensor<4x10xf32>
  }
  %n = exec.dispatch_region -> (tensor<4x10xbf16>) {
    %0 = tg.cast %g : tensor<4x10xf32> -> tensor<4x10xbf16>
    exec.yield %0 : tensor<4x10xbf16>
  }
  %p = exec.dispatch_region -> (tensor<4x16xbf16>) {
    %0 = tg.pad %n low [0, 0] high [0, 6] : tensor<4x10xbf16> -> tensor<4x16xbf16>
    exec.yield %0 : tensor<4x16xbf16>
  }
  return %loss, %p : tensor<f32>, tensor<4x16xbf16>
}

// -----

// What must not fuse: a row input that is not elementwise (an embedding),
// one read before the norm runs, a bias add of a GEMM's product (the GEMM's
// epilogue); a dx consumer broadcasting it to a larger shape, one reading
// the weight gradient too, one that is not elementwise, and a dx read
// before its elementwise consumer runs.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-12: exec.dispatch_region
// CHECK-NOT: exec.dispatch_region
// REMARK: remark: not fused into the row kernel of 'tg.rms_norm': it is not elementwise
// REMARK: remark: not fused into the row kernel of 'tg.rms_norm': 'tg.matmul' reads it before that kernel runs
// REMARK: remark: not fused into the row kernel of 'tg.layer_norm': it is a bias add of a GEMM's product, left to exec-fuse-gemm-bias as the GEMM's epilogue
// REMARK: remark: dx not fused into its consumer as an epilogue: its elementwise ops have another shape
// REMARK: remark: dx not fused into its consumer as an epilogue: the consumer reads the weight or bias gradient too, sums over every row that are complete only after the last one
// REMARK: remark: dx not fused into its consumer as an epilogue: its consumer is not elementwise
func.func @refused(%table: tensor<16x8xf32>, %ids: tensor<4xi64>, %w: tensor<8xf32>, %m: tensor<8x8xf32>, %b: tensor<8xf32>, %big: tensor<3x4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<3x4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.embedding %table[%ids] : tensor<16x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %n0 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.rms_norm %e, %w {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %s = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %n0, %e : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %early = tg.matmul %s, %m : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %n1 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.rms_norm %s, %w {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %biased = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.add %early, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %n2 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.layer_norm %biased, %w, %b {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %g:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %n1, %w, %n2 {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
  }
  %wide = exec.dispatch_region -> (tensor<3x4x8xf32>) {
    %0 = tg.add %big, %g#0 : tensor<3x4x8xf32>, tensor<4x8xf32> -> tensor<3x4x8xf32>
    exec.yield %0 : tensor<3x4x8xf32>
  }
  %h:2 = exec.dispatch_region -> (tensor<4x8xf32>, tensor<8xf32>) {
    %dx, %dw = tg.rms_norm_grad %n1, %w, %n0 {epsilon = 1.0e-5 : f64} : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<8xf32>
    exec.yield %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
  }
  %withdw = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.mul %h#0, %h#1 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %k = exec.dispatch_region -> (tensor<4x8xf32>) {
    %0 = tg.softmax_grad %n1, %n2 : tensor<4x8xf32>
    exec.yield %0 : tensor<4x8xf32>
  }
  %sum = exec.dispatch_region -> (tensor<4xf32>) {
    %0 = tg.reduce_sum %k [1] : tensor<4x8xf32> -> tensor<4xf32>
    exec.yield %0 : tensor<4xf32>
  }
  return %n0, %n1, %n2, %wide, %withdw, %sum : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<3x4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Llama's queries into their heads: the transpose joins the rope's kernel,
// which reads the rows in the tokens' layout. The inverse rope of a
// gradient and the transpose of its result back into tokens likewise: the
// kernel writes the rows in the tokens' layout.
// CHECK-LABEL: func.func @heads_transposes_into_rope
// CHECK: %[[Q:.*]] = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
// CHECK-NEXT: %[[H:.*]] = tg.transpose %arg0 [0, 2, 1, 3]
// CHECK-NEXT: %[[R:.*]] = tg.rope %[[H]]
// CHECK-NEXT: exec.yield %[[R]] :
// CHECK: %[[G:.*]] = exec.dispatch_region -> (tensor<2x3x4x8xf32>) {
// CHECK-NEXT: %[[I:.*]] = tg.rope %arg1 {inverse
// CHECK-NEXT: %[[T:.*]] = tg.transpose %[[I]] [0, 2, 1, 3]
// CHECK-NEXT: exec.yield %[[T]] :
// CHECK-NOT: exec.dispatch_region
// CHECK: return %[[Q]], %[[G]]
// REMARK: remark: heads' transpose (its input's) fused into the rope kernel: saves writing and reading 768 bytes
// REMARK: remark: heads' transpose (its result's) fused into the rope kernel: saves writing and reading 768 bytes
func.func @heads_transposes_into_rope(%q: tensor<2x3x4x8xf32>, %dq: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>) {
  %heads = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.transpose %q [0, 2, 1, 3] : tensor<2x3x4x8xf32> -> tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %rotated = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.rope %heads {theta = 1.0e+04 : f64} : tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %unrotated = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.rope %dq {inverse, theta = 1.0e+04 : f64} : tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %tokens = exec.dispatch_region -> (tensor<2x3x4x8xf32>) {
    %0 = tg.transpose %unrotated [0, 2, 1, 3] : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
    exec.yield %0 : tensor<2x3x4x8xf32>
  }
  return %rotated, %tokens : tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>
}

// -----

// What stays: transposed heads that something else reads too; a transpose
// of other dims; a rope result that something besides the transpose reads.
// CHECK-LABEL: func.func @heads_transposes_that_stay
// CHECK-COUNT-6: exec.dispatch_region
// CHECK-NOT: exec.dispatch_region
// CHECK: return
// REMARK: remark: heads' transpose (its input's) not fused into the rope kernel: something else reads the transposed heads
// REMARK-NOT: heads' transpose
func.func @heads_transposes_that_stay(%q: tensor<2x3x4x8xf32>, %k: tensor<2x4x8x8xf32>, %v: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>) {
  %heads = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.transpose %q [0, 2, 1, 3] : tensor<2x3x4x8xf32> -> tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %rotated = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.rope %heads {theta = 1.0e+04 : f64} : tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %swapped = exec.dispatch_region -> (tensor<2x4x8x8xf32>) {
    %0 = tg.transpose %k [0, 1, 3, 2] : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
    exec.yield %0 : tensor<2x4x8x8xf32>
  }
  %rotated_k = exec.dispatch_region -> (tensor<2x4x8x8xf32>) {
    %0 = tg.rope %swapped {theta = 1.0e+04 : f64} : tensor<2x4x8x8xf32>
    exec.yield %0 : tensor<2x4x8x8xf32>
  }
  %rotated_v = exec.dispatch_region -> (tensor<2x4x3x8xf32>) {
    %0 = tg.rope %v {theta = 1.0e+04 : f64} : tensor<2x4x3x8xf32>
    exec.yield %0 : tensor<2x4x3x8xf32>
  }
  %tokens = exec.dispatch_region -> (tensor<2x3x4x8xf32>) {
    %0 = tg.transpose %rotated_v [0, 2, 1, 3] : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
    exec.yield %0 : tensor<2x3x4x8xf32>
  }
  return %heads, %rotated, %rotated_k, %rotated_v, %tokens : tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4x8xf32>
}
