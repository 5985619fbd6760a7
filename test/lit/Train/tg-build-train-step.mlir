// RUN: tg-opt %s --split-input-file --verify-diagnostics --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=2 lr=0.001 grad-clip-norm=1.0 lr-schedule=cosine warmup-steps=2 decay-steps=10" | FileCheck %s
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 lr=0.001 lr-schedule=linear" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=MICRO

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

// Bad options are errors naming the option.
// SCHEDULE: option 'lr-schedule' must be constant or cosine, got 'linear'
// MICRO: option 'micro-batches' (3) must divide batch-size (4)
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %h, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
