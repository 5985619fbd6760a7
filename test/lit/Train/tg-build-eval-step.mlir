// RUN: tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-eval-step="batch-size=4 seq-len=4 micro-batches=2" | FileCheck %s
// RUN: tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-eval-step="batch-size=4 seq-len=4 data-parallel=2" | FileCheck %s --check-prefix=DP
// RUN: not tg-opt %s --split-input-file --tg-build-eval-step="batch-size=4 seq-len=4 micro-batches=3" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not tg-opt %s --split-input-file --tg-build-eval-step="batch-size=8 seq-len=4 micro-batches=2" 2>&1 | FileCheck %s --check-prefix=TOKENS
// RUN: not tg-opt %s --split-input-file --tg-build-eval-step="function=fwd batch-size=4 seq-len=4" 2>&1 | FileCheck %s --check-prefix=NAME

// @eval_step beside @forward, which stays for the training step: the loss of
// the rank's rows in micro-batches (the training step's rows), no gradients,
// no update. Parameters are the masters (f32) the training step holds; the
// bf16 forward gets a cast of them.
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME:    %wte: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "wte"}
// CHECK-SAME:    %tokens: tensor<4x4xi32> {tg.input = "tokens"}
// CHECK-SAME:    %targets: tensor<4x4xi32> {tg.input = "targets"}
// CHECK-SAME:    -> (tensor<f32> {tg.output = "loss"})
// CHECK:         %param_compute = tg.cast %wte : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK:         %[[L:.+]] = tg.micro_batches 2 sliced(%tokens, %targets : tensor<4x4xi32>, tensor<4x4xi32>) shared(%param_compute : tensor<8x8xbf16>)
// CHECK:           tg.embedding %{{.+}} : tensor<8x8xbf16>, tensor<2x4xi32>
// CHECK-NOT:       _grad
// CHECK:           tg.yield
// CHECK:         } -> tensor<f32>
// CHECK:         return %[[L]] : tensor<f32>
// CHECK-LABEL: func.func @forward(

// Data parallel over 2 ranks: each rank evaluates its 2 of the 4 rows, and
// the loss is averaged over "data"; the module gets the mesh.
// DP:          module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>}
// DP-LABEL:    func.func @eval_step(
// DP-SAME:       %tokens: tensor<2x4xi32> {tg.input = "tokens"}
// DP:            %[[L:.+]] = tg.micro_batches 1
// DP:            %loss_avg = tg.all_reduce avg %[[L]] over "data"
// DP:            return %loss_avg

// Options are checked by name, and the forward must be one micro-batch.
// MICRO: option 'micro-batches' (3) must divide batch-size (4)
// TOKENS: tokens are 2x4, expected (batch_size / (data_parallel x micro_batches)) x seq_len = 4x4
// NAME: tg-build-eval-step: no function @fwd (option 'function')
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xbf16> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x4x8xbf16> {tg.output = "logits"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xbf16>, tensor<2x4xi32> -> tensor<2x4x8xbf16>
  %f = tg.cast %h : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %f, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l, %h : tensor<f32>, tensor<2x4x8xbf16>
}
