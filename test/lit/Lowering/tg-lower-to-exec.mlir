// RUN: tg-opt %s --split-input-file --tg-lower-to-exec=seed=7 --verify-diagnostics | FileCheck %s

// A step with a library GEMM, dispatch regions (two equal ones sharing a
// kernel), a view, a constant, an output written by the command computing
// it, and new state: typed resources in argument order, then scratch
// resources created where they are first written. The program records the
// interface: batch and sequence from the "tokens" input, the vocabulary
// from the module's tg.vocab_size, the seed option and the matmul FLOPs.
// The moment is returned unchanged: nothing to copy.
// CHECK-LABEL: exec.program @train_step
// CHECK-SAME:    batch_size = 2 : i64, flops_per_step = 1.280000e+02 : f64, mesh_axes = ["data"], mesh_shape = array<i64: 1>, seed = 7 : i64, seq_len = 4 : i64, vocab_size = 16 : i64
// CHECK-NEXT:    %[[W:.+]] = exec.resource parameter "w" {init = #tg.init<normal, std = 0.02>} : memref<4x8xf32>
// CHECK-NEXT:    exec.resource adam_m "w" : memref<4x8xf32>
// CHECK-NEXT:    exec.resource input "tokens" : memref<2x4xi32>
// CHECK-NEXT:    %[[X:.+]] = exec.resource input "x" : memref<2x4xf32>
// CHECK-NEXT:    %[[B:.+]] = exec.resource input "b" : memref<8xf32>
// CHECK-NEXT:    %[[C:.+]] = exec.resource constant {value = dense<5.000000e-01> : tensor<f32>} : memref<f32>
// CHECK-NEXT:    %[[Y:.+]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT:    exec.gemm(%[[X]], %[[W]]) -> %[[Y]] {batch = 1 : i64, k = 4 : i64, m = 2 : i64, n = 8 : i64, stride_a = 8 : i64, stride_b = 0 : i64, stride_c = 16 : i64}
// CHECK-NEXT:    %[[Z:.+]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k0_add(%[[Y]], %[[B]]) -> (%[[Z]])
// CHECK-NEXT:    %[[Z2:.+]] = exec.resource scratch : memref<2x8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k0_add(%[[Z]], %[[B]]) -> (%[[Z2]])
// CHECK-NEXT:    %[[FLAT:.+]] = exec.view %[[Z2]] : memref<2x8xf32> to memref<16xf32>
// CHECK-NEXT:    %[[LOSS:.+]] = exec.resource output "loss" : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k1_reduce_sum(%[[FLAT]]) -> (%[[LOSS]])
// CHECK-NEXT:    %[[WNEW:.+]] = exec.resource scratch updates(%[[W]] : memref<4x8xf32>) : memref<4x8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k2_mul(%[[W]], %[[C]]) -> (%[[WNEW]])
// CHECK-NEXT:  }
// Kernels on tensors, outlined from the regions: captured values become
// arguments, yielded values results.
// CHECK-LABEL: module @kernels
// CHECK:         func.func @k0_add(%{{.+}}: tensor<2x8xf32>, %{{.+}}: tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:      tg.add
// CHECK:         func.func @k1_reduce_sum(%{{.+}}: tensor<16xf32>) -> tensor<f32>
// CHECK:         func.func @k2_mul
// CHECK-NOT:     func.func
module attributes {tg.vocab_size = 16 : i64} {
func.func @train_step(%w: tensor<4x8xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 0.02>},
                      %m: tensor<4x8xf32> {tg.state = #tg.state<adam_m, "w">},
                      %tokens: tensor<2x4xi32> {tg.input = "tokens"},
                      %x: tensor<2x4xf32> {tg.input = "x"},
                      %b: tensor<8xf32> {tg.input = "b"})
    -> (tensor<4x8xf32> {tg.updates = #tg.state<param, "w">},
        tensor<4x8xf32> {tg.updates = #tg.state<adam_m, "w">},
        tensor<f32> {tg.output = "loss"}) {
  %c = tg.constant dense<0.5> : tensor<f32>
  %y = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %z = exec.dispatch_region -> (tensor<2x8xf32>) {
    %a = tg.add %y, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    exec.yield %a : tensor<2x8xf32>
  }
  %z2 = exec.dispatch_region -> (tensor<2x8xf32>) {
    %a = tg.add %z, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    exec.yield %a : tensor<2x8xf32>
  }
  %flat = tg.reshape %z2 : tensor<2x8xf32> -> tensor<16xf32>
  %loss = exec.dispatch_region -> (tensor<f32>) {
    %s = tg.reduce_sum %flat [0] : tensor<16xf32> -> tensor<f32>
    exec.yield %s : tensor<f32>
  }
  %w2 = exec.dispatch_region -> (tensor<4x8xf32>) {
    %d = tg.mul %w, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
    exec.yield %d : tensor<4x8xf32>
  }
  return %w2, %m, %loss : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>
}
}

// -----

// Results that no command computes (a view of an input, an input, a
// constant) are copied into their output or state resource at the end.
// CHECK-LABEL: exec.program @train_step
// CHECK:         %[[W:.+]] = exec.resource parameter "w"
// CHECK-NEXT:    %[[X:.+]] = exec.resource input "x" : memref<6xf32>
// CHECK-NEXT:    %[[C:.+]] = exec.resource constant
// CHECK-NEXT:    %[[V:.+]] = exec.view %[[X]] : memref<6xf32> to memref<2x3xf32>
// CHECK-NEXT:    exec.copy %[[V]] -> %[[W]]
// CHECK-NEXT:    %[[ECHO:.+]] = exec.resource output "echo" : memref<6xf32>
// CHECK-NEXT:    exec.copy %[[X]] -> %[[ECHO]]
// CHECK-NEXT:    %[[HALF:.+]] = exec.resource output "half" : memref<f32>
// CHECK-NEXT:    exec.copy %[[C]] -> %[[HALF]]
func.func @train_step(%w: tensor<2x3xf32> {tg.param = "w", tg.init = #tg.init<zeros>},
                      %x: tensor<6xf32> {tg.input = "x"})
    -> (tensor<2x3xf32> {tg.updates = #tg.state<param, "w">},
        tensor<6xf32> {tg.output = "echo"}, tensor<f32> {tg.output = "half"}) {
  %c = tg.constant dense<0.5> : tensor<f32>
  %v = tg.reshape %x : tensor<6xf32> -> tensor<2x3xf32>
  return %v, %x, %c : tensor<2x3xf32>, tensor<6xf32>, tensor<f32>
}

// -----

// Data parallel over the module's mesh ["data"] = [2]: the program takes the
// mesh, and its batch_size is the global batch (each rank's 2 token rows
// times 2 ranks). An all-reduce becomes an exec.all_reduce: in place over a
// scratch input nothing else reads (the gradient), into a new buffer
// otherwise (here the output resource of the loss).
// CHECK-LABEL: exec.program @train_step
// CHECK-SAME:    batch_size = 4 : i64, {{.*}}mesh_axes = ["data"], mesh_shape = array<i64: 2>, {{.*}}seq_len = 3 : i64
// CHECK:         %[[G:.+]] = exec.resource scratch : memref<8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k0_mul(%{{.+}}) -> (%[[G]])
// CHECK-NEXT:    exec.all_reduce avg %[[G]] -> %[[G]] over "data" : memref<8xf32> -> memref<8xf32>
// CHECK:         %[[L:.+]] = exec.resource scratch : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k1_reduce_sum(%[[G]]) -> (%[[L]])
// CHECK-NEXT:    %[[LOSS:.+]] = exec.resource output "loss" : memref<f32>
// CHECK-NEXT:    exec.all_reduce avg %[[L]] -> %[[LOSS]] over "data" : memref<f32> -> memref<f32>
// CHECK-NEXT:    %[[NORM:.+]] = exec.resource output "norm" : memref<f32>
// CHECK-NEXT:    exec.dispatch @kernels::@k1_reduce_sum(%[[G]]) -> (%[[NORM]])
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
func.func @train_step(%x: tensor<8xf32> {tg.input = "x"},
                      %tokens: tensor<2x3xi32> {tg.input = "tokens"})
    -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "norm"}) {
  %g = exec.dispatch_region -> (tensor<8xf32>) {
    %sq = tg.mul %x, %x : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    exec.yield %sq : tensor<8xf32>
  }
  %g_avg = tg.all_reduce avg %g over "data" : tensor<8xf32>
  %l = exec.dispatch_region -> (tensor<f32>) {
    %s = tg.reduce_sum %g_avg [0] : tensor<8xf32> -> tensor<f32>
    exec.yield %s : tensor<f32>
  }
  %l_avg = tg.all_reduce avg %l over "data" : tensor<f32>
  %n = exec.dispatch_region -> (tensor<f32>) {
    %s = tg.reduce_sum %g_avg [0] : tensor<8xf32> -> tensor<f32>
    exec.yield %s : tensor<f32>
  }
  return %l_avg, %n : tensor<f32>, tensor<f32>
}
}

// -----

// A bias's gradient, a sum reshaped (a view of its buffer), is all-reduced
// in place when nothing else reads that buffer; a reshaped value that is
// read elsewhere gets a new buffer.
// CHECK-LABEL: exec.program @train_step
// CHECK:         %[[SUM:.+]] = exec.resource scratch : memref<1x8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k0_reduce_sum(%{{.+}}) -> (%[[SUM]])
// CHECK-NEXT:    %[[FLAT:.+]] = exec.view %[[SUM]] : memref<1x8xf32> to memref<8xf32>
// CHECK-NEXT:    exec.all_reduce avg %[[FLAT]] -> %[[FLAT]] over "data"
// CHECK:         %[[SUM2:.+]] = exec.resource scratch : memref<1x8xf32>
// CHECK-NEXT:    exec.dispatch @kernels::@k0_reduce_sum(%{{.+}}) -> (%[[SUM2]])
// CHECK-NEXT:    %[[FLAT2:.+]] = exec.view %[[SUM2]] : memref<1x8xf32> to memref<8xf32>
// CHECK-NEXT:    %[[AVG2:.+]] = exec.resource output "g2" : memref<8xf32>
// CHECK-NEXT:    exec.all_reduce avg %[[FLAT2]] -> %[[AVG2]] over "data"
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
func.func @train_step(%x: tensor<4x8xf32> {tg.input = "x"},
                      %tokens: tensor<2x3xi32> {tg.input = "tokens"})
    -> (tensor<8xf32> {tg.output = "g"}, tensor<8xf32> {tg.output = "g2"}, tensor<1x8xf32> {tg.output = "sq2"}) {
  %s = exec.dispatch_region -> (tensor<1x8xf32>) {
    %r = tg.reduce_sum %x [0] {keep_dims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
    exec.yield %r : tensor<1x8xf32>
  }
  %flat = tg.reshape %s : tensor<1x8xf32> -> tensor<8xf32>
  %g = tg.all_reduce avg %flat over "data" : tensor<8xf32>
  %d = exec.dispatch_region -> (tensor<8xf32>) {
    %m = tg.mul %g, %g : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    exec.yield %m : tensor<8xf32>
  }
  %s2 = exec.dispatch_region -> (tensor<1x8xf32>) {
    %r = tg.reduce_sum %x [0] {keep_dims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
    exec.yield %r : tensor<1x8xf32>
  }
  %flat2 = tg.reshape %s2 : tensor<1x8xf32> -> tensor<8xf32>
  %g2 = tg.all_reduce avg %flat2 over "data" : tensor<8xf32>
  %sq2 = exec.dispatch_region -> (tensor<1x8xf32>) {
    %m = tg.mul %s2, %s2 : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
    exec.yield %m : tensor<1x8xf32>
  }
  return %d, %g2, %sq2 : tensor<8xf32>, tensor<8xf32>, tensor<1x8xf32>
}
}

// -----

// A reduce-scatter and an all-gather write new buffers of their own sizes.
// CHECK-LABEL: exec.program @train_step
// CHECK:         %[[S:.+]] = exec.resource scratch : memref<4xf32>
// CHECK-NEXT:    exec.reduce_scatter avg %{{.+}} -> %[[S]] over "data" : memref<8xf32> -> memref<4xf32>
// CHECK:         %[[G:.+]] = exec.resource output "gathered" : memref<8xf32>
// CHECK-NEXT:    exec.all_gather %{{.+}} -> %[[G]] over "data" : memref<4xf32> -> memref<8xf32>
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
func.func @train_step(%x: tensor<8xf32> {tg.input = "x"},
                      %tokens: tensor<2x3xi32> {tg.input = "tokens"})
    -> (tensor<8xf32> {tg.output = "gathered"}) {
  %s = tg.reduce_scatter avg %x over "data" : tensor<8xf32> -> tensor<4xf32>
  %d = exec.dispatch_region -> (tensor<4xf32>) {
    %m = tg.mul %s, %s : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    exec.yield %m : tensor<4xf32>
  }
  %g = tg.all_gather %d over "data" : tensor<4xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}
}

// -----

// Attention must be decomposed first.
func.func @train_step(%q: tensor<1x2x4x8xf32> {tg.input = "q"}) -> (tensor<1x2x4x8xf32> {tg.output = "o"}) {
  // expected-error @+1 {{'tg.attention' op cannot be lowered to exec: run tg-decompose-attention first}}
  %o = tg.attention %q, %q, %q {scale = 0.35355339 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Flash attention outside a dispatch region (tg-form-dispatch-regions'
// library-attention) becomes an exec.attention, the CUDA runtime's kernels:
// inputs then outputs in the artifact's order, a bf16 operand's batch, head
// and row strides in its layout ([B, H, T, D], or [B, T, H, D] for the
// gradient's result_tokens), and a scratch buffer for the gradient's delta
// (f32, a row each).
// CHECK-LABEL: exec.program @train_step
// CHECK:         %[[Q:.+]] = exec.resource input "q" : memref<2x4x128x64xbf16>
// CHECK:         %[[K:.+]] = exec.resource input "k" : memref<2x2x128x64xbf16>
// CHECK:         %[[V:.+]] = exec.resource input "v" : memref<2x2x128x64xbf16>
// CHECK:         %[[OT:.+]] = exec.resource input "ot" : memref<2x128x4x64xbf16>
// CHECK:         %[[DO:.+]] = exec.resource input "do" : memref<2x4x128x64xbf16>
// CHECK:         %[[O:.+]] = exec.resource output "o" : memref<2x4x128x64xbf16>
// CHECK-NEXT:    %[[LSE:.+]] = exec.resource scratch : memref<2x4x128xf32>
// CHECK-NEXT:    exec.attention(%[[Q]], %[[K]], %[[V]]) -> (%[[O]], %[[LSE]]) {batch = 2 : i64, causal = true, head_dim = 64 : i64, key_heads = 2 : i64, key_len = 128 : i64, query_heads = 4 : i64, query_len = 128 : i64, scale = 1.250000e-01 : f64, strides = array<i64: 32768, 8192, 64, 16384, 8192, 64, 16384, 8192, 64, 32768, 8192, 64>, window = 16 : i64} : (memref<2x4x128x64xbf16>, memref<2x2x128x64xbf16>, memref<2x2x128x64xbf16>) -> (memref<2x4x128x64xbf16>, memref<2x4x128xf32>)
// CHECK-NEXT:    %[[DELTA:.+]] = exec.resource scratch : memref<2x4x128xf32>
// CHECK:         exec.attention(%[[Q]], %[[K]], %[[V]], %[[OT]], %[[LSE]], %[[DO]]) -> (%[[DELTA]], %{{.+}}, %{{.+}}, %{{.+}}) {batch = 2 : i64, causal = true, gradient, head_dim = 64 : i64, key_heads = 2 : i64, key_len = 128 : i64, query_heads = 4 : i64, query_len = 128 : i64, scale = 1.250000e-01 : f64, strides = array<i64: 32768, 8192, 64, 16384, 8192, 64, 16384, 8192, 64, 32768, 64, 256, 32768, 8192, 64, 32768, 8192, 64, 16384, 8192, 64, 16384, 8192, 64>, window = 16 : i64}
func.func @train_step(%tokens: tensor<2x128xi32> {tg.input = "tokens"},
                      %q: tensor<2x4x128x64xbf16> {tg.input = "q"},
                      %k: tensor<2x2x128x64xbf16> {tg.input = "k"},
                      %v: tensor<2x2x128x64xbf16> {tg.input = "v"},
                      %ot: tensor<2x128x4x64xbf16> {tg.input = "ot"},
                      %do: tensor<2x4x128x64xbf16> {tg.input = "do"})
    -> (tensor<2x4x128x64xbf16> {tg.output = "o"}, tensor<2x4x128x64xbf16> {tg.output = "dq"},
        tensor<2x2x128x64xbf16> {tg.output = "dk"}, tensor<2x2x128x64xbf16> {tg.output = "dv"}) {
  %o, %lse = tg.flash_attention %q, %k, %v {scale = 0.125 : f64, window = 16 : i64} : tensor<2x4x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16> -> tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>
  %dq, %dk, %dv = tg.flash_attention_grad %q, %k, %v, %ot, %lse, %do {scale = 0.125 : f64, window = 16 : i64, result_tokens} : tensor<2x4x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x128x4x64xbf16>, tensor<2x4x128xf32>, tensor<2x4x128x64xbf16> -> tensor<2x4x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
  return %o, %dq, %dk, %dv : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x2x128x64xbf16>, tensor<2x2x128x64xbf16>
}

// -----

// The runtime's flash kernels take bf16 only: an f32 flash op outside a
// region cannot be lowered.
func.func @train_step(%tokens: tensor<2x128xi32> {tg.input = "tokens"},
                      %q: tensor<1x1x64x64xf32> {tg.input = "q"})
    -> (tensor<1x1x64x64xf32> {tg.output = "o"}) {
  // expected-error @+1 {{'tg.flash_attention' op is outside a dispatch region, so it needs the runtime's flash kernels, which take bf16 with head dim 64 or 128}}
  %o, %lse = tg.flash_attention %q, %q, %q {scale = 0.125 : f64} : tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32> -> tensor<1x1x64x64xf32>, tensor<1x1x64xf32>
  return %o : tensor<1x1x64x64xf32>
}

// -----

// The step function must exist.
// expected-error @+1 {{no function @train_step to lower; set the pass option functions=NAME,...}}
module {
  func.func @forward() {
    return
  }
}

// -----

// With a rotary position embedding inside (rope_theta), exec.attention
// carries the head dim's 32 pair frequencies theta^(-2i/D), the first 1.
// CHECK-LABEL: exec.program @train_step
// CHECK:         exec.attention
// CHECK-SAME:    rope_frequencies = array<f64: 1.000000e+00, 0.74989420933245587,
// CHECK:         exec.attention
// CHECK-SAME:    gradient
// CHECK-SAME:    rope_frequencies = array<f64: 1.000000e+00, 0.74989420933245587,
func.func @train_step(%q: tensor<1x2x64x64xbf16> {tg.input = "q"},
                      %do: tensor<1x2x64x64xbf16> {tg.input = "do"})
    -> (tensor<1x2x64x64xbf16> {tg.output = "o"}, tensor<1x2x64x64xbf16> {tg.output = "dq"}) {
  %o, %lse = tg.flash_attention %q, %q, %q {rope_theta = 1.0e4 : f64, scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  %dq, %dk, %dv = tg.flash_attention_grad %q, %q, %q, %o, %lse, %do {rope_theta = 1.0e4 : f64, scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
  return %o, %dq : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
}

// -----

// Flash ops marked for cuDNN's fused attention (tg-fuse-attention's cudnn)
// become exec.attention with `cudnn`, which the artifact's Attention
// commands carry as their library.
// CHECK-LABEL: exec.program @train_step
// CHECK:         exec.attention
// CHECK-SAME:    cudnn
// CHECK:         exec.attention
// CHECK-SAME:    cudnn
// CHECK-SAME:    gradient
func.func @train_step(%q: tensor<1x2x64x64xbf16> {tg.input = "q"},
                      %do: tensor<1x2x64x64xbf16> {tg.input = "do"})
    -> (tensor<1x2x64x64xbf16> {tg.output = "o"}, tensor<1x2x64x64xbf16> {tg.output = "dq"}) {
  %o, %lse = tg.flash_attention %q, %q, %q {cudnn, scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  %dq, %dk, %dv = tg.flash_attention_grad %q, %q, %q, %o, %lse, %do {cudnn, scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
  return %o, %dq : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>
}
