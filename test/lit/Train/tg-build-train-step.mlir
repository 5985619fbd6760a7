// RUN: tg-opt %s --split-input-file --verify-diagnostics --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=2 lr=0.001 grad-clip-norm=1.0 lr-schedule=cosine warmup-steps=2 decay-steps=10" | FileCheck %s
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 lr=0.001 lr-schedule=linear" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 micro-batches=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: tg-opt %s --mlir-use-nameloc-as-prefix --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 lr=0.001 grad-clip-norm=1.0" | FileCheck %s --check-prefix=DP
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-BATCH
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 micro-batches=3 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-MICRO
// RUN: not tg-opt %s --tg-build-train-step="batch-size=8 seq-len=4 data-parallel=2 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-TOKENS
// RUN: sed -e '1i module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {' -e '$a }' %s | not tg-opt --tg-build-train-step="batch-size=2 seq-len=4 lr=0.001" 2>&1 | FileCheck %s --check-prefix=DP-MESH
// RUN: tg-opt %S/Inputs/zero-forward.mlir --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 zero=1 lr=0.001 grad-clip-norm=1.0" | FileCheck %s --check-prefix=ZERO
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 zero=1 lr=0.001" 2>&1 | FileCheck %s --check-prefix=ZERO-DP
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=4 data-parallel=2 zero=2 lr=0.001" 2>&1 | FileCheck %s --check-prefix=ZERO-STAGE

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

// ZeRO-1 over 2 data ranks (forwards in Inputs/zero-forward.mlir). Each
// moment is the rank's chunk of the flattened parameter: C = ceil(N / 2),
// 32 of wte's 64 elements, 3 of head_b's 5 (padded to 6), and carries
// tg.optimizer_shard. Without a partitioned forward's mesh_coordinate the
// step gets one (["data"]) to find its chunk.
// ZERO-LABEL: func.func @train_step(
// ZERO-SAME:    %adam_m_wte: tensor<32xf32> {tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 32>, tg.state = #tg.state<adam_m, "wte">}
// ZERO-SAME:    %adam_v_head_b: tensor<3xf32> {tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>, tg.state = #tg.state<adam_v, "head_b">}
// ZERO-SAME:    %mesh_coordinate: tensor<1xi64> {tg.input = "mesh_coordinate"}
// ZERO-SAME:    -> (tensor<8x8xf32> {tg.updates = #tg.state<param, "wte">}, tensor<8x5xf32> {tg.updates = #tg.state<param, "head">}, tensor<5xf32> {tg.updates = #tg.state<param, "head_b">}, tensor<32xf32> {tg.updates = #tg.state<adam_m, "wte">}
// ZERO:         %data_index = tg.slice %mesh_coordinate{{\[\[}}0]] {{\[\[}}1]] : tensor<1xi64> -> tensor<1xi64>
// The loss is still all-reduced; each gradient is flattened, padded with
// zeros and reduce-scattered instead.
// ZERO:         %loss_avg = tg.all_reduce avg %[[L:.+]]#0 over "data" : tensor<f32>
// ZERO-NEXT:    %grad_wte_flat = tg.reshape %[[L]]#1 : tensor<8x8xf32> -> tensor<64xf32>
// ZERO-NEXT:    %grad_wte_shard = tg.reduce_scatter avg %grad_wte_flat over "data" : tensor<64xf32> -> tensor<32xf32>
// ZERO:         %grad_head_b_padded = tg.pad %[[L]]#3 low [0] high [1] : tensor<5xf32> -> tensor<6xf32>
// ZERO-NEXT:    %grad_head_b_shard = tg.reduce_scatter avg %grad_head_b_padded over "data" : tensor<6xf32> -> tensor<3xf32>
// ZERO-NOT:     tg.all_reduce avg
// The norm: the chunks' squares summed over "data".
// ZERO:         %grad_sq_head_b = tg.reduce_sum %{{.+}} [0] : tensor<3xf32> -> tensor<f32>
// ZERO-NEXT:    %[[SQ:.+]] = tg.add %grad_sq_sum{{.*}}, %grad_sq_head_b
// ZERO-NEXT:    %grad_sq_sum_data = tg.all_reduce sum %[[SQ]] over "data" : tensor<f32>
// ZERO-NEXT:    %grad_norm = tg.sqrt %grad_sq_sum_data
// AdamW on the rank's chunk, then the chunks all-gathered into the
// parameter; weight decay for the matrix, not for the bias.
// ZERO:         %wte_shard = tg.shard_slice %wte_flat[%data_index] {dim = 0 : i64} : tensor<64xf32>, tensor<1xi64> -> tensor<32xf32>
// ZERO-NEXT:    %wte_decayed = tg.mul %wte_shard, %adam_decay
// ZERO:         %wte_new_shard = tg.sub %wte_decayed, %adam_update_wte : tensor<32xf32>
// ZERO-NEXT:    %wte_new_gathered = tg.all_gather %wte_new_shard over "data" : tensor<32xf32> -> tensor<64xf32>
// ZERO-NEXT:    %wte_new = tg.reshape %wte_new_gathered : tensor<64xf32> -> tensor<8x8xf32>
// ZERO:         %head_b_padded = tg.pad %head_b low [0] high [1] : tensor<5xf32> -> tensor<6xf32>
// ZERO-NEXT:    %head_b_shard = tg.shard_slice %head_b_padded[%data_index] {dim = 0 : i64} : tensor<6xf32>, tensor<1xi64> -> tensor<3xf32>
// ZERO-NOT:     tg.mul %head_b_shard
// ZERO:         %head_b_new_shard = tg.sub %head_b_shard, %adam_update_head_b
// ZERO-NEXT:    %head_b_new_gathered = tg.all_gather %head_b_new_shard over "data" : tensor<3xf32> -> tensor<6xf32>
// ZERO-NEXT:    %head_b_new = tg.slice %head_b_new_gathered{{\[\[}}0]] {{\[\[}}5]] : tensor<6xf32> -> tensor<5xf32>
// ZERO:         return %wte_new, %head_new, %head_b_new, %adam_m_wte_new, %adam_m_head_new, %adam_m_head_b_new, %adam_v_wte_new, %adam_v_head_new, %adam_v_head_b_new, %loss_avg, %grad_norm, %lr
// With tensor parallelism the chunk is one of the tp share (fc_w: 32 of
// 64 elements, chunks of 16), the data index the partitioned forward's
// mesh_coordinate[0]. The norm sums fc_w's squares over "data" and
// "tensor", wte's (replicated over "tensor") over "data" only.
// ZERO-LABEL: func.func @train_step(
// ZERO-SAME:    %adam_m_fc_w: tensor<16xf32> {tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 16>, tg.state = #tg.state<adam_m, "fc_w">}
// ZERO-NOT:     %mesh_coordinate: tensor<1xi64>
// ZERO:         %data_index = tg.slice %mesh_coordinate{{\[\[}}0]] {{\[\[}}1]] : tensor<2xi64> -> tensor<1xi64>
// ZERO:         %grad_fc_w_shard = tg.reduce_scatter avg %grad_fc_w_flat over "data" : tensor<32xf32> -> tensor<16xf32>
// ZERO:         %grad_sq_sum_data = tg.all_reduce sum %grad_sq_wte over "data" : tensor<f32>
// ZERO-NEXT:    %[[DT:.+]] = tg.all_reduce sum %grad_sq_fc_w over "data" : tensor<f32>
// ZERO-NEXT:    %[[T:.+]] = tg.all_reduce sum %[[DT]] over "tensor" : tensor<f32>
// ZERO-NEXT:    %grad_sq_sum = tg.add %grad_sq_sum_data, %[[T]]
// ZERO-NEXT:    %grad_norm = tg.sqrt %grad_sq_sum
// ZERO:         %fc_w_new_gathered = tg.all_gather %fc_w_new_shard over "data" : tensor<16xf32> -> tensor<32xf32>
// ZERO-NEXT:    %fc_w_new = tg.reshape %fc_w_new_gathered : tensor<32xf32> -> tensor<8x4xf32>
// ZERO-DP: option 'zero' 1 splits the AdamW state over the data-parallel ranks and needs data-parallel > 1, got 1
// ZERO-STAGE: option 'zero' must be 0 or 1, got 2

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
