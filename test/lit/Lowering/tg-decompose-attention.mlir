// RUN: tg-opt %s --split-input-file --tg-decompose-attention --mlir-use-nameloc-as-prefix | FileCheck %s
// RUN: tg-opt %s --split-input-file --tg-decompose-attention='keep-probs-factor=0' --mlir-use-nameloc-as-prefix | FileCheck %s --check-prefix=RECOMPUTE
// RUN: tg-opt %s --split-input-file --tg-decompose-attention='remarks=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: tg-opt %s --split-input-file --tg-decompose-attention='causal-blocks=2 min-block-queries=2' --mlir-use-nameloc-as-prefix | FileCheck %s --check-prefix=BLOCKS

// Multi-head causal attention (G = 1): no reshapes, scores = Q K^T scaled,
// the [T, S] mask (-inf above the diagonal) added, softmax, then P V under
// the original name.
// CHECK-LABEL: func.func @mha_causal(
// CHECK: %causal_mask = tg.constant dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK: %h0_attn_scale = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NOT: tg.reshape
// CHECK: %h0_attn_scores = tg.matmul %q, %k {transpose_rhs = true} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x3xf32>
// CHECK: %h0_attn_scaled = tg.mul %h0_attn_scores, %h0_attn_scale : tensor<1x2x3x3xf32>, tensor<f32> -> tensor<1x2x3x3xf32>
// CHECK: %h0_attn_masked = tg.add %h0_attn_scaled, %causal_mask : tensor<1x2x3x3xf32>, tensor<3x3xf32> -> tensor<1x2x3x3xf32>
// CHECK: %h0_attn_probs = tg.softmax %h0_attn_masked : tensor<1x2x3x3xf32>
// CHECK-NOT: tg.reshape
// CHECK: %h0_attn = tg.matmul %h0_attn_probs, %v : tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NOT: tg.attention
// CHECK: return %h0_attn
func.func @mha_causal(%q: tensor<1x2x3x4xf32> loc("q"), %k: tensor<1x2x3x4xf32> loc("k"),
                      %v: tensor<1x2x3x4xf32> loc("v")) -> tensor<1x2x3x4xf32> {
  %0 = tg.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32> loc("h0_attn")
  return %0 : tensor<1x2x3x4xf32>
}

// -----

// Grouped-query attention, Hq = 4, Hkv = 2 (G = 2), T = S = 2: the query is
// viewed as [B, Hkv, G*T, D] and the mask has G*T rows, row r masking keys
// after position r mod T.
// CHECK-LABEL: func.func @gqa_causal(
// CHECK: %causal_mask = tg.constant dense<{{\[}}[0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00], [0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00]]> : tensor<4x2xf32>
// CHECK: %attn_q = tg.reshape %q : tensor<3x4x2x8xf32> -> tensor<3x2x4x8xf32>
// CHECK: %attn_scores = tg.matmul %attn_q, %k {transpose_rhs = true} : tensor<3x2x4x8xf32>, tensor<3x2x2x8xf32> -> tensor<3x2x4x2xf32>
// CHECK: %attn_scaled = tg.mul %attn_scores, %attn_scale
// CHECK: %attn_masked = tg.add %attn_scaled, %causal_mask : tensor<3x2x4x2xf32>, tensor<4x2xf32> -> tensor<3x2x4x2xf32>
// CHECK: %attn_probs = tg.softmax %attn_masked : tensor<3x2x4x2xf32>
// CHECK: %attn_pv = tg.matmul %attn_probs, %v : tensor<3x2x4x2xf32>, tensor<3x2x2x8xf32> -> tensor<3x2x4x8xf32>
// CHECK: %attn = tg.reshape %attn_pv : tensor<3x2x4x8xf32> -> tensor<3x4x2x8xf32>
// CHECK: return %attn
func.func @gqa_causal(%q: tensor<3x4x2x8xf32> loc("q"), %k: tensor<3x2x2x8xf32> loc("k"),
                      %v: tensor<3x2x2x8xf32> loc("v")) -> tensor<3x4x2x8xf32> {
  %0 = tg.attention %q, %k, %v {scale = 0.35355339059327379 : f64} : tensor<3x4x2x8xf32>, tensor<3x2x2x8xf32>, tensor<3x2x2x8xf32> -> tensor<3x4x2x8xf32> loc("attn")
  return %0 : tensor<3x4x2x8xf32>
}

// -----

// Non-causal, multi-query (Hkv = 1), T != S, f64: no mask, no add.
// CHECK-LABEL: func.func @mqa_full(
// CHECK-NOT: tg.add
// CHECK: %x_scale = tg.constant dense<2.500000e-01> : tensor<f64>
// CHECK: %x_q = tg.reshape %q : tensor<2x4x3x16xf64> -> tensor<2x1x12x16xf64>
// CHECK: %x_scores = tg.matmul %x_q, %k {transpose_rhs = true} : tensor<2x1x12x16xf64>, tensor<2x1x5x16xf64> -> tensor<2x1x12x5xf64>
// CHECK: %x_scaled = tg.mul %x_scores, %x_scale
// CHECK-NOT: tg.add
// CHECK: %x_probs = tg.softmax %x_scaled : tensor<2x1x12x5xf64>
// CHECK: %x_pv = tg.matmul %x_probs, %v : tensor<2x1x12x5xf64>, tensor<2x1x5x16xf64> -> tensor<2x1x12x16xf64>
// CHECK: %x = tg.reshape %x_pv : tensor<2x1x12x16xf64> -> tensor<2x4x3x16xf64>
// CHECK-NOT: causal_mask
func.func @mqa_full(%q: tensor<2x4x3x16xf64> loc("q"), %k: tensor<2x1x5x16xf64> loc("k"),
                    %v: tensor<2x1x5x16xf64> loc("v")) -> tensor<2x4x3x16xf64> {
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64, causal = false} : tensor<2x4x3x16xf64>, tensor<2x1x5x16xf64>, tensor<2x1x5x16xf64> -> tensor<2x4x3x16xf64> loc("x")
  return %0 : tensor<2x4x3x16xf64>
}

// -----

// The gradient, GQA in bf16: P is recomputed, dV = P^T dO', dP = dO' V^T,
// dS = scale * softmax_grad(P, dP), dQ = dS K (reshaped back), dK = dS^T q'.
// CHECK-LABEL: func.func @gqa_grad(
// CHECK: %causal_mask = tg.constant dense<{{.*}}0xFF80{{.*}}> : tensor<4x3xbf16>
// CHECK: %g_scale = tg.constant dense<1.250000e-01> : tensor<bf16>
// CHECK: %g_q = tg.reshape %q : tensor<1x4x2x3xbf16> -> tensor<1x2x4x3xbf16>
// CHECK: %g_scores = tg.matmul %g_q, %k {transpose_rhs = true} : tensor<1x2x4x3xbf16>, tensor<1x2x3x3xbf16> -> tensor<1x2x4x3xbf16>
// CHECK: %g_scaled = tg.mul %g_scores, %g_scale
// CHECK: %g_masked = tg.add %g_scaled, %causal_mask
// CHECK: %g_probs = tg.softmax %g_masked : tensor<1x2x4x3xbf16>
// CHECK: %g_dout = tg.reshape %dout : tensor<1x4x2x3xbf16> -> tensor<1x2x4x3xbf16>
// CHECK: %g_dv = tg.matmul %g_probs, %g_dout {transpose_lhs = true} : tensor<1x2x4x3xbf16>, tensor<1x2x4x3xbf16> -> tensor<1x2x3x3xbf16>
// CHECK: %g_dprobs = tg.matmul %g_dout, %v {transpose_rhs = true} : tensor<1x2x4x3xbf16>, tensor<1x2x3x3xbf16> -> tensor<1x2x4x3xbf16>
// CHECK: %g_dscaled = tg.softmax_grad %g_probs, %g_dprobs : tensor<1x2x4x3xbf16>
// CHECK: %g_dscores = tg.mul %g_dscaled, %g_scale
// CHECK: %g_dq_grouped = tg.matmul %g_dscores, %k : tensor<1x2x4x3xbf16>, tensor<1x2x3x3xbf16> -> tensor<1x2x4x3xbf16>
// CHECK: %g_dq = tg.reshape %g_dq_grouped : tensor<1x2x4x3xbf16> -> tensor<1x4x2x3xbf16>
// CHECK: %g_dk = tg.matmul %g_dscores, %g_q {transpose_lhs = true} : tensor<1x2x4x3xbf16>, tensor<1x2x4x3xbf16> -> tensor<1x2x3x3xbf16>
// CHECK-NOT: tg.attention_grad
// CHECK: return %g_dq, %g_dk, %g_dv
func.func @gqa_grad(%q: tensor<1x4x2x3xbf16> loc("q"), %k: tensor<1x2x3x3xbf16> loc("k"),
                    %v: tensor<1x2x3x3xbf16> loc("v"), %dout: tensor<1x4x2x3xbf16> loc("dout"))
    -> (tensor<1x4x2x3xbf16>, tensor<1x2x3x3xbf16>, tensor<1x2x3x3xbf16>) {
  %0:3 = tg.attention_grad %q, %k, %v, %dout {scale = 0.125 : f64} : tensor<1x4x2x3xbf16>, tensor<1x2x3x3xbf16>, tensor<1x2x3x3xbf16>, tensor<1x4x2x3xbf16> -> tensor<1x4x2x3xbf16>, tensor<1x2x3x3xbf16>, tensor<1x2x3x3xbf16> loc("g")
  return %0#0, %0#1, %0#2 : tensor<1x4x2x3xbf16>, tensor<1x2x3x3xbf16>, tensor<1x2x3x3xbf16>
}

// -----

// Two layers with the same shapes share one mask constant, built at the top
// of the function.
// CHECK-LABEL: func.func @two_layers(
// CHECK-NEXT: %causal_mask = tg.constant
// CHECK-NOT: %causal_mask{{.*}} = tg.constant
// CHECK: %l0_masked = tg.add %l0_scaled, %causal_mask
// CHECK: %l1_masked = tg.add %l1_scaled, %causal_mask
func.func @two_layers(%x: tensor<1x2x4x8xf32> loc("x")) -> tensor<1x2x4x8xf32> {
  %0 = tg.attention %x, %x, %x {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> loc("l0")
  %1 = tg.attention %0, %0, %0 {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32> loc("l1")
  return %1 : tensor<1x2x4x8xf32>
}

// -----

// Causal with a single key: every query sees it, so there is nothing to mask.
// CHECK-LABEL: func.func @single_key(
// CHECK-NOT: causal_mask
// CHECK-NOT: tg.add
// CHECK: tg.softmax
func.func @single_key(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x1x4xf32>) -> tensor<1x1x3x4xf32> {
  %0 = tg.attention %q, %k, %k {scale = 0.5 : f64} : tensor<1x1x3x4xf32>, tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x1x3x4xf32>
  return %0 : tensor<1x1x3x4xf32>
}

// -----

// Sliding-window attention (Mistral), window 2 over 4 positions: query t
// sees keys t - 2 < s <= t, and a plain causal attention in the same
// function has its own mask. The gradient reuses the forward's
// probabilities (4 keys <= 4 x head dim 2); told to recompute them, it uses
// the same mask.
// CHECK-LABEL: func.func @sliding_window(
// CHECK-DAG: %window_mask = tg.constant dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0xFF800000, 0.000000e+00, 0.000000e+00, 0xFF800000], [0xFF800000, 0xFF800000, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
// CHECK-DAG: %causal_mask = tg.constant dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
// CHECK: %w_masked = tg.add %w_scaled, %window_mask
// CHECK: %c_masked = tg.add %c_scaled, %causal_mask
// CHECK-NOT: %dq_masked
// CHECK: tg.softmax_grad %w_probs
// RECOMPUTE-LABEL: func.func @sliding_window(
// RECOMPUTE: %dq_masked = tg.add %dq_scaled, %window_mask
// RECOMPUTE: tg.softmax_grad %dq_probs
// REMARK: remark: {{.*}}keeps the forward's attention probabilities (0.0 MiB): keys per row 4 <= 4.0 x head dim 2
func.func @sliding_window(%q: tensor<1x1x4x2xf32> loc("q"), %k: tensor<1x1x4x2xf32> loc("k"),
                          %v: tensor<1x1x4x2xf32> loc("v"), %g: tensor<1x1x4x2xf32> loc("g"))
    -> (tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.5 : f64, window = 2 : i64} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32> loc("w")
  %1 = tg.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32> loc("c")
  %dq, %dk, %dv = tg.attention_grad %q, %k, %v, %g {scale = 0.5 : f64, window = 2 : i64} : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> loc("dq")
  return %0, %1, %dq : tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>
}

// -----

// A budget for the kept probabilities (the CUDA target's: keys per row do
// not matter, a tenth of the device's memory does): two gradients whose P
// takes 1 MiB each (4 heads of 256 x 256 f32), 1.5 MiB allowed. The first
// gradient in program order keeps its forward's P; the second would exceed
// the budget and recomputes it.
// RUN: tg-opt %s --split-input-file --tg-decompose-attention='keep-probs-factor=inf keep-probs-mib=1.5 remarks=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: tg-opt %s --split-input-file --tg-decompose-attention='keep-probs-factor=inf keep-probs-mib=1.5' --mlir-use-nameloc-as-prefix | FileCheck %s --check-prefix=BUDGET-IR
// BUDGET: remark: {{.*}}keeps the forward's attention probabilities (1.0 MiB): 1.0 of 1.5 MiB kept
// BUDGET: remark: {{.*}}recomputes the forward's attention probabilities (1.0 MiB): keeping them would exceed the budget: 1.0 of 1.5 MiB kept
// BUDGET-IR-LABEL: func.func @budget(
// BUDGET-IR-NOT: %da_probs
// BUDGET-IR: tg.softmax_grad %b_probs
// BUDGET-IR: %da_probs = tg.softmax
// BUDGET-IR: tg.softmax_grad %da_probs
func.func @budget(%q: tensor<1x4x256x2xf32> loc("q"), %q2: tensor<1x4x256x2xf32> loc("q2"),
                  %k: tensor<1x4x256x2xf32> loc("k"), %v: tensor<1x4x256x2xf32> loc("v"),
                  %g: tensor<1x4x256x2xf32> loc("g"))
    -> (tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> -> tensor<1x4x256x2xf32> loc("a")
  %1 = tg.attention %q2, %k, %v {scale = 0.5 : f64} : tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> -> tensor<1x4x256x2xf32> loc("b")
  %db:3 = tg.attention_grad %q2, %k, %v, %g {scale = 0.5 : f64} : tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> -> tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> loc("db")
  %da:3 = tg.attention_grad %q, %k, %v, %g {scale = 0.5 : f64} : tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> -> tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32> loc("da")
  return %0, %1, %db#0, %da#0 : tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>, tensor<1x4x256x2xf32>
}

// -----

// Causal query blocks (causal-blocks=2; here blocks of 2 queries, the default
// minimum is 256): the first block's queries see keys 0..1 only, so its
// products and softmax take the first half of K and V and a [2, 2] mask; the
// second block sees all 4 keys. The outputs and dq are concatenated, each
// block's dk and dv padded to the 4 keys and added. (Below 2 x 256 queries,
// by default, nothing is split.)
// CHECK-LABEL: func.func @causal_blocks(
// CHECK-NOT: tg.slice
// The function records the model's FLOPs before the rewrite, which does
// fewer (2 x 2 x B H T S D forward + 5 x 2 x B H T S D backward = 896), for
// MFU: tg-lower-to-exec takes them for the program's flops_per_step.
// BLOCKS-LABEL: func.func @causal_blocks(
// BLOCKS-SAME: attributes {tg.model_flops = 896 : i64}
// BLOCKS-DAG: %[[MASK1:.*]] = tg.constant dense<{{\[}}[0.000000e+00, 0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<2x4xf32>
// BLOCKS-DAG: %[[MASK0:.*]] = tg.constant dense<{{\[}}[0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
// BLOCKS: %attn_q_rows_b0 = tg.slice %q{{\[\[}}0, 0, 0, 0]] {{\[\[}}1, 2, 2, 2]]
// BLOCKS: %attn_k_rows_b0 = tg.slice %k{{\[\[}}0, 0, 0, 0]] {{\[\[}}1, 2, 2, 2]]
// BLOCKS: %attn_v_rows_b0 = tg.slice %v{{\[\[}}0, 0, 0, 0]] {{\[\[}}1, 2, 2, 2]]
// BLOCKS: %attn_scores_b0 = tg.matmul %attn_q_rows_b0, %attn_k_rows_b0 {transpose_rhs = true} : {{.*}} -> tensor<1x2x2x2xf32>
// BLOCKS: %attn_masked_b0 = tg.add %attn_scaled_b0, %[[MASK0]]
// BLOCKS: %attn_probs_b0 = tg.softmax %attn_masked_b0 : tensor<1x2x2x2xf32>
// BLOCKS: %attn_q_rows_b1 = tg.slice %q{{\[\[}}0, 0, 2, 0]] {{\[\[}}1, 2, 2, 2]]
// BLOCKS: %attn_scores_b1 = tg.matmul %attn_q_rows_b1, %k {transpose_rhs = true} : {{.*}} -> tensor<1x2x2x4xf32>
// BLOCKS: %attn_masked_b1 = tg.add %attn_scaled_b1, %[[MASK1]]
// BLOCKS: %attn_out_b0 = tg.matmul %attn_probs_b0, %attn_v_rows_b0
// BLOCKS: %attn_out_b1 = tg.matmul %attn_probs_b1, %v
// BLOCKS: %attn = tg.concat %attn_out_b0, %attn_out_b1 {axis = 2 : i64}
// BLOCKS-NOT: tg.softmax %
// BLOCKS: %grad_attn_dv_b0 = tg.matmul %attn_probs_b0, %grad_attn_dout_rows_b0 {transpose_lhs = true}
// BLOCKS: %grad_attn_dq_b0 = tg.matmul %grad_attn_dscores_b0, %attn_k_rows_b0
// BLOCKS: %grad_attn_dk_b0 = tg.matmul %grad_attn_dscores_b0, %attn_q_rows_b0 {transpose_lhs = true}
// BLOCKS: %grad_attn_dv_b1 = tg.matmul %attn_probs_b1, %grad_attn_dout_rows_b1 {transpose_lhs = true} : {{.*}} -> tensor<1x2x4x2xf32>
// BLOCKS: %grad_attn_dq = tg.concat %grad_attn_dq_b0, %grad_attn_dq_b1 {axis = 2 : i64}
// BLOCKS: %grad_attn_dk_padded_b0 = tg.pad %grad_attn_dk_b0 low [0, 0, 0, 0] high [0, 0, 2, 0]
// BLOCKS: %grad_attn_dk = tg.add %grad_attn_dk_padded_b0, %grad_attn_dk_b1
// BLOCKS: %grad_attn_dv_padded_b0 = tg.pad %grad_attn_dv_b0 low [0, 0, 0, 0] high [0, 0, 2, 0]
// BLOCKS: %grad_attn_dv = tg.add %grad_attn_dv_padded_b0, %grad_attn_dv_b1
// BLOCKS: return %attn, %grad_attn_dq, %grad_attn_dk, %grad_attn_dv
func.func @causal_blocks(%q: tensor<1x2x4x2xf32> loc("q"), %k: tensor<1x2x4x2xf32> loc("k"),
                         %v: tensor<1x2x4x2xf32> loc("v"), %dout: tensor<1x2x4x2xf32> loc("dout"))
    -> (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) {
  %0 = tg.attention %q, %k, %v {scale = 0.5 : f64, causal = true} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32> loc("attn")
  %1:3 = tg.attention_grad %q, %k, %v, %dout {scale = 0.5 : f64, causal = true} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> loc("grad_attn")
  return %0, %1#0, %1#1, %1#2 : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
}
