// RUN: tg-opt %s --split-input-file --verify-diagnostics --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=2 lr=0.001 grad-clip-norm=1.0 lr-schedule=cosine warmup-steps=2 decay-steps=10" | FileCheck %s
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 lr=0.001 lr-schedule=linear" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: tg-opt %s --mlir-use-nameloc-as-prefix --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 lr=0.001 grad-clip-norm=1.0" | FileCheck %s --check-prefix=DP
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-BATCH
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 micro-batches=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-MICRO
// RUN: not tg-opt %s --tg-build-train-step="batch-size=8 seq-len=4 data-parallel=2 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-TOKENS
// RUN: sed -e '1i module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {' -e '$a }' %s | not tg-opt --tg-build-train-step="batch-size=2 seq-len=4 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-MESH

// The options, not a file, set the step: the forward and backward run in a
// tg.micro_batches loop over 2 slices of the 4-sequence batch, the gradient
// is clipped to norm 1, the learning rate follows a cosine with 2 warm-up
// steps, and AdamW updates the weight and its moments (tg.state arguments,
// tg.updates results).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %wte: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "wte"}
// CHECK-SAME:    %adam_m_wte: tensor<8x8xf32> {tg.state = #tg.state<adam_m, "wte">}
// CHECK-SAME:    %adam_v_wte: tensor<8x8xf32> {tg.state = #tg.state<adam_v, "wte">}
// CHECK-SAME:    %tokens: tensor<4x4xi32> {tg.input = "tokens"}
// CHECK-SAME:    -> (tensor<8x8xf32> {tg.updates = #tg.state<param, "wte">}, tensor<8x8xf32> {tg.updates = #tg.state<adam_m, "wte">}, tensor<8x8xf32> {tg.updates = #tg.state<adam_v, "wte">}, tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<f32> {tg.output = "lr"})
// CHECK:         %[[L:.+]]:2 = tg.micro_batches 2 sliced(%tokens, %targets : tensor<4x4xi32>, tensor<4x4xi32>) shared(%wte : tensor<8x8xf32>)
// CHECK:           tg.embedding %{{.+}} : tensor<8x8xf32>, tensor<2x4xi32>
// CHECK:           tg.embedding_grad
// CHECK:           tg.yield
// CHECK:         %clip_coef_clamped = tg.min
// CHECK:         %lr_warmup = tg.mul
// CHECK:         %lr_cos = tg.cos
// CHECK:         %wte_new = tg.sub
// CHECK:         return %wte_new, %adam_m_wte_new, %adam_v_wte_new, %[[L]]#0, %grad_norm, %lr

// Data parallel over 2 ranks: the module gets the mesh ["data"] = [2], each
// rank's step takes its 2 of the 4 sequences, and the loss and the gradient
// are averaged over the ranks right after the micro-batch loop, before the
// gradient norm, clipping and AdamW read them.
// DP:      module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>}
// DP:        %tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"}
// DP:        %[[L:.+]]:2 = tg.micro_batches 1 sliced(%tokens, %targets : tensor<2x4xi32>, tensor<2x4xi32>)
// DP:          tg.yield
// DP-NEXT:   } -> tensor<f32>, tensor<8x8xf32>
// DP-NEXT:   %loss_avg = tg.all_reduce avg %[[L]]#0 over "data" : tensor<f32>
// DP-NEXT:   %grad_wte_avg = tg.all_reduce avg %[[L]]#1 over "data" : tensor<8x8xf32>
// DP-NEXT:   %grad_sq = tg.mul %grad_wte_avg, %grad_wte_avg
// DP:        %grad_clipped_wte = tg.mul %grad_wte_avg, %clip_coef_clamped
// DP:        %adam_m_wte_grad = tg.mul %grad_clipped_wte
// DP:        return %wte_new, %adam_m_wte_new, %adam_v_wte_new, %loss_avg, %grad_norm, %lr

// Bad options are errors naming the option.
// DP-BATCH: option 'data-parallel' (3) must divide batch-size (4)
// DP-MICRO: option 'micro-batches' (3) must divide the rows of one rank, batch-size / data-parallel = 4 / 2 = 2
// DP-TOKENS: tokens are 2x4, expected (batch_size / (data_parallel x micro_batches)) x seq_len = 4x4
// A mesh the module declares must agree with the option.
// DP-MESH: option 'data-parallel' (1) differs from the size of the mesh axis "data" declared by the module (2, tg.mesh_axes = ["data"], tg.mesh_shape = [2]); make them equal
// SCHEDULE: option 'lr-schedule' must be constant or cosine, got 'linear'
// MICRO: option 'micro-batches' (3) must divide batch-size (4)
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %h, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
