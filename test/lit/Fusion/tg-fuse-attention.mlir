// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention))' --mlir-use-nameloc-as-prefix | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// A target whose flash kernels are off keeps every op for the decomposition.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{flash-kernels=false remarks=true}))' 2>&1 | FileCheck %s --check-prefix=NOKERNEL
// NOKERNEL-COUNT-3: remark: not fused: the target's flash kernels are off (on CUDA: --cuda-attention=decomposed)
// NOKERNEL-NOT: tg.flash_attention
// NOKERNEL: tg.attention_plan = [{kernel = "decomposed", op = "attention", reason = "the target's flash kernels are off (on CUDA: --cuda-attention=decomposed)"}]
// With GEMMs assumed 100x faster and no memory budget, the decomposition
// wins everywhere.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{gemm-gflops=10000 bandwidth-gbs=10000 max-score-mib=1000000}))' | FileCheck %s --check-prefix=FAST-GEMM
// FAST-GEMM-NOT: tg.flash_attention

// A long causal sequence (T = S = 1024, 16 heads, D = 16): the
// decomposition's [1024, 1024] score matrices of the 16 heads would take
// 64 MiB each, over max-score-mib, so the flash kernels are used although
// they are estimated slower here; the forward and its gradient (same q, k,
// v) become the pair of flash ops, the gradient reading the forward's
// result and log-sum-exp.
// Each decision and its reason is also kept for tgc --stats.
// CHECK-LABEL: func.func @causal_pair(
// CHECK-SAME: attributes {tg.attention_plan = [{kernel = "flash", op = "attention", reason = "its score matrices would take 64.0 MiB each, more than max-score-mib (32.0)"}]}
// CHECK: %[[O:.*]], %[[LSE:.*]] = tg.flash_attention %q, %k, %v {scale = 2.500000e-01 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32> -> tensor<1x16x1024x16xf32>, tensor<1x16x1024xf32>
// CHECK: tg.flash_attention_grad %q, %k, %v, %[[O]], %[[LSE]], %dout {scale = 2.500000e-01 : f64} :
// CHECK-SAME: -> tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>
// CHECK-NOT: tg.attention
// REMARK: remark: fused into flash attention with its gradient: its score matrices would take 64.0 MiB each, more than max-score-mib (32.0); {{.*}} ms estimated for the flash kernels (524800 of 1048576 (query, key) pairs visible) against {{.*}} ms decomposed
func.func @causal_pair(%q: tensor<1x16x1024x16xf32> loc("q"), %k: tensor<1x16x1024x16xf32> loc("k"),
                       %v: tensor<1x16x1024x16xf32> loc("v"), %dout: tensor<1x16x1024x16xf32> loc("dout"))
    -> (tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32> -> tensor<1x16x1024x16xf32>
  %1:3 = tg.attention_grad %q, %k, %v, %dout {scale = 0.25 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32> -> tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>
  return %0, %1#0, %1#1, %1#2 : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>
}

// With a budget of 128 MiB the memory rule does not apply, and the pair is
// fused because it is estimated faster: with D = 16 the decomposition's
// passes over 64 MiB score matrices cost more than its GEMMs, and the flash
// kernels do half the pairs. With GEMMs and score passes assumed 100x faster
// it is not.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{remarks=true max-score-mib=128}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: remark: fused into flash attention with its gradient: estimated faster; {{.*}} ms estimated for the flash kernels (524800 of 1048576 (query, key) pairs visible) against {{.*}} ms decomposed, whose score matrices take 64.0 MiB each

// -----

// A forward alone (an eval step), grouped-query, with a sliding window of
// 64: 30,752 of 262,144 pairs visible per head, so the flash kernel is
// estimated faster (4 MiB of scores: under the budget); the log-sum-exp is
// unused.
// CHECK-LABEL: func.func @window_forward(
// CHECK-SAME: {tg.attention_plan = [{kernel = "flash", op = "attention", reason = "estimated faster: {{[0-9.]+}} ms estimated against {{[0-9.]+}} ms decomposed"}]}
// CHECK: %[[O:.*]], %{{.*}} = tg.flash_attention %q, %k, %v {scale = 2.500000e-01 : f64, window = 64 : i64} : tensor<1x4x512x16xf32>, tensor<1x2x512x16xf32>, tensor<1x2x512x16xf32> -> tensor<1x4x512x16xf32>, tensor<1x4x512xf32>
// CHECK: return %[[O]]
// REMARK: remark: fused into flash attention: estimated faster; {{.*}} (30752 of 262144 (query, key) pairs visible)
func.func @window_forward(%q: tensor<1x4x512x16xf32> loc("q"), %k: tensor<1x2x512x16xf32> loc("k"),
                          %v: tensor<1x2x512x16xf32> loc("v")) -> tensor<1x4x512x16xf32> {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64, window = 64 : i64} : tensor<1x4x512x16xf32>, tensor<1x2x512x16xf32>, tensor<1x2x512x16xf32> -> tensor<1x4x512x16xf32>
  return %0 : tensor<1x4x512x16xf32>
}

// -----

// A short sequence (T = S = 8): the batched GEMMs over a few pairs are
// cheaper than the flash kernels' loops, so it stays for the decomposition.
// A gradient whose forward is not in the function is decomposed too.
// CHECK-LABEL: func.func @short(
// CHECK-SAME: {tg.attention_plan = [{kernel = "decomposed", op = "attention", reason = "estimated slower: {{[0-9.]+}} ms estimated against {{[0-9.]+}} ms decomposed"}, {kernel = "decomposed", op = "attention", reason = "no tg.attention of the same query, key and value precedes it in its block"}]}
// CHECK-NOT: tg.flash_attention
// CHECK: tg.attention %q
// CHECK: tg.attention_grad %q2
// REMARK: remark: not fused: {{.*}} ms estimated for the flash kernels (36 of 64 (query, key) pairs visible) against {{.*}} ms decomposed
// REMARK: remark: not fused: no tg.attention of the same query, key and value precedes it in its block; it is decomposed
func.func @short(%q: tensor<2x2x8x16xf32> loc("q"), %k: tensor<2x2x8x16xf32> loc("k"),
                 %v: tensor<2x2x8x16xf32> loc("v"), %q2: tensor<2x2x8x16xf32> loc("q2"))
    -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>
  %1:3 = tg.attention_grad %q2, %k, %v, %0 {scale = 0.25 : f64} : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  return %0, %1#0 : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

// The forward's result transposed to [B, T, H, D] for the output projection
// (as the model builders do): the gradient reads that copy (result_tokens),
// so the result itself is not kept until the backward pass.
// CHECK-LABEL: func.func @tokens_layout(
// CHECK: %[[O:.*]], %[[LSE:.*]] = tg.flash_attention %q, %k, %v
// CHECK: %[[T:.*]] = tg.transpose %[[O]] [0, 2, 1, 3]
// CHECK: tg.flash_attention_grad %q, %k, %v, %[[T]], %[[LSE]], %dout {result_tokens, scale = 2.500000e-01 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x1024x16x16xf32>, tensor<1x16x1024xf32>, tensor<1x16x1024x16xf32>
func.func @tokens_layout(%q: tensor<1x16x1024x16xf32> loc("q"), %k: tensor<1x16x1024x16xf32> loc("k"),
                         %v: tensor<1x16x1024x16xf32> loc("v"), %dout: tensor<1x16x1024x16xf32> loc("dout"))
    -> (tensor<1x1024x16x16xf32>, tensor<1x16x1024x16xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32> -> tensor<1x16x1024x16xf32>
  %t = tg.transpose %0 [0, 2, 1, 3] : tensor<1x16x1024x16xf32> -> tensor<1x1024x16x16xf32>
  %1:3 = tg.attention_grad %q, %k, %v, %dout {scale = 0.25 : f64} : tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32> -> tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>, tensor<1x16x1024x16xf32>
  return %t, %1#0 : tensor<1x1024x16x16xf32>, tensor<1x16x1024x16xf32>
}

// -----

// A head dim above the flash kernels' limit (512) stays decomposed, even
// where its score matrices (16 heads of [1024, 1024]) are over the budget.
// CHECK-LABEL: func.func @wide_heads(
// CHECK-NOT: tg.flash_attention
// CHECK: tg.attention
// REMARK: remark: not fused: its head dim 1024 is above the flash kernels' 512 (a task holds 16 x D elements on the stack)
func.func @wide_heads(%q: tensor<1x16x1024x1024xf32>) -> tensor<1x16x1024x1024xf32> {
  %0 = tg.attention %q, %q, %q {scale = 0.03125 : f64} : tensor<1x16x1024x1024xf32>, tensor<1x16x1024x1024xf32>, tensor<1x16x1024x1024xf32> -> tensor<1x16x1024x1024xf32>
  return %0 : tensor<1x16x1024x1024xf32>
}

// -----

// The CUDA runtime's flash kernels (library-kernels; tgc --cuda-attention=
// flash) take bf16 with head dim 64 or 128: such a pair is fused whatever
// the estimate (T = 8, which the CPU's cost model leaves to the
// decomposition); head dim 32 and f32 are decomposed, each with its reason.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{library-kernels=true remarks=true}))' 2>&1 | FileCheck %s --check-prefix=LIBRARY
// LIBRARY: remark: fused into flash attention: the runtime's flash kernels (--cuda-attention=flash)
// LIBRARY: remark: not fused: its head dim 32 is not the runtime's flash kernels' 64 or 128
// LIBRARY: remark: not fused: the runtime's flash kernels take bf16 (compile with --dtype=bf16)
// LIBRARY-LABEL: func.func @library_kernels(
// LIBRARY-SAME: {tg.attention_plan = [{kernel = "flash", op = "attention", reason = "the runtime's flash kernels (--cuda-attention=flash)"}, {kernel = "decomposed", op = "attention", reason = "its head dim 32 is not the runtime's flash kernels' 64 or 128"}, {kernel = "decomposed", op = "attention", reason = "the runtime's flash kernels take bf16 (compile with --dtype=bf16)"}]}
// LIBRARY: %[[O:.*]], %[[LSE:.*]] = tg.flash_attention %arg0, %arg1, %arg2
// LIBRARY: tg.flash_attention_grad %arg0, %arg1, %arg2, %[[O]], %[[LSE]], %arg3
// LIBRARY: tg.attention %arg4
// LIBRARY: tg.attention %arg5
func.func @library_kernels(%q: tensor<1x2x8x64xbf16>, %k: tensor<1x1x8x64xbf16>,
                           %v: tensor<1x1x8x64xbf16>, %dout: tensor<1x2x8x64xbf16>,
                           %q32: tensor<1x2x8x32xbf16>, %qf: tensor<1x2x8x64xf32>)
    -> (tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x64xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.125 : f64} : tensor<1x2x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x2x8x64xbf16>
  %1:3 = tg.attention_grad %q, %k, %v, %dout {scale = 0.125 : f64} : tensor<1x2x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x2x8x64xbf16> -> tensor<1x2x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>
  %2 = tg.attention %q32, %q32, %q32 {scale = 0.125 : f64} : tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x32xbf16> -> tensor<1x2x8x32xbf16>
  %3 = tg.attention %qf, %qf, %qf {scale = 0.125 : f64} : tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32>, tensor<1x2x8x64xf32> -> tensor<1x2x8x64xf32>
  return %0, %1#0, %2, %3 : tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x32xbf16>, tensor<1x2x8x64xf32>
}

// -----

// Llama's rotary position embedding: q and k are tg.rope results read by
// the attention and its gradient only, and the query and key gradients are
// each read only by their rotation back. The flash ops take q and k before
// the rotation and apply it themselves (rope_* attributes, the frequencies'
// scaling included); the gradients come rotated back: no tg.rope is left.
// The rope option turns it off.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{rope=false remarks=true}))' 2>&1 | FileCheck %s --check-prefix=NOROPE
// CHECK-LABEL: func.func @rope_inside(
// CHECK-SAME: reason = "its score matrices would take 64.0 MiB each, more than max-score-mib (32.0); RoPE inside"
// CHECK: %[[O:.*]], %[[LSE:.*]] = tg.flash_attention %q, %k, %v {rope_scaling_factor = 2.000000e+00 : f64, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64}
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tg.flash_attention_grad %q, %k, %v, %[[O]], %[[LSE]], %dout {rope_scaling_factor = 2.000000e+00 : f64, rope_theta = 1.000000e+04 : f64, scale = 2.500000e-01 : f64}
// CHECK-NOT: tg.rope
// CHECK: return %[[O]], %[[DQ]], %[[DK]], %[[DV]]
// REMARK: remark: fused into flash attention with its gradient: its score matrices would take 64.0 MiB each{{.*}}; the kernels apply the rotary position embedding of its queries and keys
// NOROPE-LABEL: func.func @rope_inside(
// NOROPE-COUNT-4: tg.rope
// NOROPE: remark: fused into flash attention with its gradient: {{.*}}; its rotary position embedding stays outside: its rope fusion is off (--no-fuse=attention-rope)
func.func @rope_inside(%q: tensor<1x4x2048x16xf32> loc("q"), %k: tensor<1x2x2048x16xf32> loc("k"),
                       %v: tensor<1x2x2048x16xf32> loc("v"), %dout: tensor<1x4x2048x16xf32> loc("dout"))
    -> (tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32>) {
  %qr = tg.rope %q {scaling_factor = 2.0 : f64, theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %kr = tg.rope %k {scaling_factor = 2.0 : f64, theta = 1.0e4 : f64} : tensor<1x2x2048x16xf32>
  %0 = tg.attention %qr, %kr, %v {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32> -> tensor<1x4x2048x16xf32>
  %1:3 = tg.attention_grad %qr, %kr, %v, %dout {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x4x2048x16xf32> -> tensor<1x4x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32>
  %dq = tg.rope %1#0 {inverse, scaling_factor = 2.0 : f64, theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %dk = tg.rope %1#1 {inverse, scaling_factor = 2.0 : f64, theta = 1.0e4 : f64} : tensor<1x2x2048x16xf32>
  return %0, %dq, %dk, %1#2 : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x2x2048x16xf32>, tensor<1x2x2048x16xf32>
}

// -----

// The CUDA runtime's kernels (library-kernels) apply the rotation too (bf16
// at head dim 64, which they take). Without the rope option (the CUDA
// target's default, tgc --fuse=attention-rope turns it on) the rotation
// stays outside, and the remark says why.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{library-kernels=true remarks=true}))' 2>&1 | FileCheck %s --check-prefix=LIBROPE
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{library-kernels=true rope=false remarks=true}))' 2>&1 | FileCheck %s --check-prefix=LIBNOROPE
// LIBNOROPE: remark: fused into flash attention: the runtime's flash kernels (--cuda-attention=flash); its rotary position embedding stays outside: its rope fusion is off (on CUDA unless --fuse=attention-rope: the runtime's kernels rotate each tile once per block that loads it, 2.2x slower forward at head dim 128 on an H200, docs/perf.md)
// LIBNOROPE-LABEL: func.func @rope_library(
// LIBNOROPE-COUNT-2: tg.rope
// LIBNOROPE: tg.flash_attention %{{.*}}, %{{.*}}, %arg2 {scale = 1.250000e-01 : f64}
// LIBROPE: remark: fused into flash attention: the runtime's flash kernels (--cuda-attention=flash); RoPE inside; the kernels apply the rotary position embedding of its queries and keys
// LIBROPE-LABEL: func.func @rope_library(
// LIBROPE-SAME: reason = "the runtime's flash kernels (--cuda-attention=flash); RoPE inside"
// LIBROPE-NOT: tg.rope
// LIBROPE: tg.flash_attention %arg0, %arg1, %arg2 {rope_theta = 1.000000e+04 : f64, scale = 1.250000e-01 : f64}
// LIBROPE-NOT: tg.rope
// LIBROPE: return
func.func @rope_library(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                        %v: tensor<1x1x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %qr = tg.rope %q {theta = 1.0e4 : f64} : tensor<1x2x64x64xbf16>
  %kr = tg.rope %k {theta = 1.0e4 : f64} : tensor<1x1x64x64xbf16>
  %0 = tg.attention %qr, %kr, %v {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %0 : tensor<1x2x64x64xbf16>
}

// -----

// cuDNN's fused attention (cudnn; tgc --cuda-attention=cudnn) takes what the
// runtime's kernels take, windowed or not: the flash ops are marked `cudnn`,
// and a rotation stays outside (cuDNN's graph cannot apply it).
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{library-kernels=true cudnn=true}))' | FileCheck %s --check-prefix=CUDNN
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-fuse-attention{library-kernels=true cudnn=true remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=CUDNN-REMARK
// CUDNN-REMARK: remark: fused into flash attention: cuDNN's fused attention (--cuda-attention=cudnn, the CUDA default since it ran faster than the runtime's flash kernels at every shape measured, docs/perf.md); its rotary position embedding stays outside: cuDNN's fused attention cannot rotate them
// CUDNN-REMARK: remark: fused into flash attention: cuDNN's fused attention (--cuda-attention=cudnn, the CUDA default since it ran faster than the runtime's flash kernels at every shape measured, docs/perf.md); its rotary position embedding stays outside: cuDNN's fused attention cannot rotate them
// CUDNN-LABEL: func.func @rope_cudnn(
// CUDNN-SAME: {kernel = "cudnn", op = "attention", reason = "cuDNN's fused attention (--cuda-attention=cudnn, the CUDA default since it ran faster than the runtime's flash kernels at every shape measured, docs/perf.md)"}, {kernel = "cudnn", op = "attention", reason = "cuDNN's fused attention (--cuda-attention=cudnn, the CUDA default since it ran faster than the runtime's flash kernels at every shape measured, docs/perf.md)"}
// CUDNN: %[[QR:.*]] = tg.rope %arg0
// CUDNN: %[[KR:.*]] = tg.rope %arg1
// CUDNN: %[[O:.*]], %[[LSE:.*]] = tg.flash_attention %[[QR]], %[[KR]], %arg2 {cudnn, scale = 1.250000e-01 : f64}
// CUDNN: tg.flash_attention_grad %[[QR]], %[[KR]], %arg2, %[[O]], %[[LSE]], %arg3 {cudnn, scale = 1.250000e-01 : f64}
// CUDNN: %[[QW:.*]] = tg.rope %arg0
// CUDNN: %[[KW:.*]] = tg.rope %arg1
// CUDNN: tg.flash_attention %[[QW]], %[[KW]], %arg2 {cudnn, scale = 1.250000e-01 : f64, window = 16 : i64}
// CUDNN: return
func.func @rope_cudnn(%q: tensor<1x2x64x64xbf16>, %k: tensor<1x1x64x64xbf16>,
                      %v: tensor<1x1x64x64xbf16>, %dout: tensor<1x2x64x64xbf16>)
    -> (tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x2x64x64xbf16>) {
  %qr = tg.rope %q {theta = 1.0e4 : f64} : tensor<1x2x64x64xbf16>
  %kr = tg.rope %k {theta = 1.0e4 : f64} : tensor<1x1x64x64xbf16>
  %0 = tg.attention %qr, %kr, %v {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x64xbf16>
  %1:3 = tg.attention_grad %qr, %kr, %v, %dout {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>
  %qw = tg.rope %q {theta = 1.0e4 : f64} : tensor<1x2x64x64xbf16>
  %kw = tg.rope %k {theta = 1.0e4 : f64} : tensor<1x1x64x64xbf16>
  %2 = tg.attention %qw, %kw, %v {scale = 0.125 : f64, window = 16 : i64} : tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x2x64x64xbf16>
  return %0, %1#0, %1#1, %2 : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x2x64x64xbf16>
}

// -----

// The rotation stays outside where the flash kernels could not take its
// place: a rotated key read by another op too, q and k rotated by other
// frequencies, a query gradient read before its rotation back.
// CHECK-LABEL: func.func @rope_kept(
// CHECK-COUNT-2: tg.rope
// CHECK: tg.flash_attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64}
// CHECK-COUNT-2: tg.rope
// CHECK: tg.flash_attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64}
// CHECK-COUNT-2: tg.rope
// CHECK: tg.flash_attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64}
// CHECK: tg.flash_attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f64}
// CHECK-COUNT-2: tg.rope {{.*}}inverse
// REMARK: remark: fused into flash attention: {{.*}}; its rotary position embedding stays outside: its rotated queries or keys are read by other ops too
// REMARK: remark: fused into flash attention: {{.*}}; its rotary position embedding stays outside: its query and key are rotated by different frequencies
// REMARK: remark: fused into flash attention with its gradient: {{.*}}; its rotary position embedding stays outside: its query or key gradient is read by more than its rotation back
func.func @rope_kept(%q: tensor<1x4x2048x16xf32>, %k: tensor<1x4x2048x16xf32>, %v: tensor<1x4x2048x16xf32>,
                     %dout: tensor<1x4x2048x16xf32>)
    -> (tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>) {
  %qr = tg.rope %q {theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %kr = tg.rope %k {theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %0 = tg.attention %qr, %kr, %v {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32> -> tensor<1x4x2048x16xf32>
  %qr2 = tg.rope %q {theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %kr2 = tg.rope %k {theta = 5.0e5 : f64} : tensor<1x4x2048x16xf32>
  %1 = tg.attention %qr2, %kr2, %v {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32> -> tensor<1x4x2048x16xf32>
  %qr3 = tg.rope %v {theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %kr3 = tg.rope %v {theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %2 = tg.attention %qr3, %kr3, %q {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32> -> tensor<1x4x2048x16xf32>
  %3:3 = tg.attention_grad %qr3, %kr3, %q, %dout {scale = 0.25 : f64} : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32> -> tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>
  %dq = tg.rope %3#0 {inverse, theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  %dk = tg.rope %3#1 {inverse, theta = 1.0e4 : f64} : tensor<1x4x2048x16xf32>
  return %0, %kr, %1, %dq, %3#0, %dk : tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>, tensor<1x4x2048x16xf32>
}
