// RUN: tg-opt %s --split-input-file --verify-diagnostics --mlir-use-nameloc-as-prefix \
// RUN:   --tg-partition-tensor-parallel="tensor-parallel=2 data-parallel=2" | FileCheck %s
// RUN: not tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-partition-tensor-parallel="tensor-parallel=2" --tg-build-train-step="batch-size=2 seq-len=4 lr=0.001 grad-clip-norm=1.0" \
// RUN:   2>%t.step.err | FileCheck %s --check-prefix=STEP
// RUN: FileCheck %s --check-prefix=STEP-ERR --implicit-check-not=error: < %t.step.err
// RUN: not tg-opt %s --split-input-file --tg-partition-tensor-parallel="tensor-parallel=3" 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: not tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-partition-tensor-parallel="tensor-parallel=2 sequence-parallel=true" 2>%t.err | FileCheck %s --check-prefix=SEQ
// RUN: FileCheck %s --check-prefix=SEQ-ERR < %t.err
// RUN: not tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-partition-tensor-parallel="tensor-parallel=2 sequence-parallel=true" \
// RUN:   --tg-build-train-step="batch-size=2 seq-len=4 lr=0.001" 2>&1 >/dev/null | FileCheck %s --check-prefix=SEQ-ERR
// RUN: not tg-opt %s --split-input-file --mlir-use-nameloc-as-prefix \
// RUN:   --tg-partition-tensor-parallel="tensor-parallel=2 sequence-parallel=true" \
// RUN:   --tg-build-train-step="batch-size=2 seq-len=4 lr=0.001" 2>/dev/null | FileCheck %s --check-prefix=SEQ-STEP

// A GPT-2 block (names as the frontend gives them): the vocabulary (5 rows,
// padded to 6) and the MLP are split; the embedding is a partial sum
// all-reduced before the norm; the MLP input fans out (its gradient is
// summed over the ranks); the row-parallel product is all-reduced before
// its bias; the loss is the vocabulary-parallel cross-entropy.
// CHECK-LABEL: module attributes {tg.mesh_axes = ["data", "tensor"], tg.mesh_shape = array<i64: 2, 2>}
// CHECK:       func.func @forward(
// CHECK-SAME:    %wte: tensor<3x8xf32> {tg.param = "transformer.wte.weight", tg.shard = #tg.shard<axis = "tensor", dim = 0, fullShape = [5, 8], paddedSize = 6, blocks = 1>}
// CHECK-SAME:    %ln_w: tensor<8xf32> {tg.param = "transformer.ln_f.weight"}
// CHECK-SAME:    %fc_w: tensor<8x8xf32> {tg.param = "transformer.h.0.mlp.c_fc.weight", tg.shard = #tg.shard<axis = "tensor", dim = 1, fullShape = [8, 16], paddedSize = 16, blocks = 1>}
// CHECK-SAME:    %fc_b: tensor<8xf32> {tg.param = "transformer.h.0.mlp.c_fc.bias", tg.shard = #tg.shard<axis = "tensor", dim = 0, fullShape = [16], paddedSize = 16, blocks = 1>}
// CHECK-SAME:    %proj_w: tensor<8x8xf32> {tg.param = "transformer.h.0.mlp.c_proj.weight", tg.shard = #tg.shard<axis = "tensor", dim = 0, fullShape = [16, 8], paddedSize = 16, blocks = 1>}
// CHECK-SAME:    %proj_b: tensor<8xf32> {tg.param = "transformer.h.0.mlp.c_proj.bias"}
// CHECK-SAME:    %mesh_coordinate: tensor<2xi64> {tg.input = "mesh_coordinate"}
// CHECK:         %tensor_index = tg.slice %mesh_coordinate{{.*}} : tensor<2xi64> -> tensor<1xi64>
// CHECK:         %[[OFF:.+]] = tg.shard_slice %{{.+}}[%tensor_index] {dim = 0 : i64} : tensor<2xi64>, tensor<1xi64> -> tensor<1xi64>
// CHECK:         %tok = tg.embedding %wte[%tokens] offset %[[OFF]] : tensor<1xi64> : tensor<3x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
// CHECK:         %tok_tp_sum = tg.all_reduce sum %tok over "tensor"
// CHECK:         %ln = tg.layer_norm %tok_tp_sum
// CHECK-NEXT:    %ln_tp_in = tg.grad_all_reduce %ln over "tensor"
// CHECK:         %fc = tg.matmul %ln_tp_in, %fc_w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK:         %fc_b{{.*}} = tg.add %fc, %fc_b : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         %gelu = tg.gelu
// CHECK:         %proj = tg.matmul %gelu, %proj_w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %proj_tp_sum = tg.all_reduce sum %proj over "tensor"
// CHECK-NEXT:    %proj_b{{.*}} = tg.add %proj_tp_sum, %proj_b
// CHECK:         %h_tp_in = tg.grad_all_reduce %h over "tensor"
// CHECK:         %logits = tg.matmul %h_tp_in, %wte {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<3x8xf32> -> tensor<2x4x3xf32>
// CHECK:         %[[MASK:.+]] = tg.shard_slice %loss_vocab_mask{{.*}}[%tensor_index] {dim = 0 : i64} : tensor<6xf32>, tensor<1xi64> -> tensor<3xf32>
// CHECK:         %loss_logits_masked = tg.add %logits, %[[MASK]]
// CHECK:         %loss_row_max = tg.reduce_max %loss_logits_masked [2] {keep_dims = true}
// CHECK-NEXT:    %loss_row_max_all = tg.all_reduce max %loss_row_max over "tensor"
// CHECK-NEXT:    %loss_row_max_const = tg.stop_gradient %loss_row_max_all
// CHECK:         %loss_exp_sum_all = tg.all_reduce sum %loss_exp_sum over "tensor"
// CHECK:         %loss_target_logit = tg.pick %loss_shifted[%targets] offset %[[OFF]] :
// CHECK-NEXT:    %loss_target_logit_all = tg.all_reduce sum %loss_target_logit over "tensor"
// CHECK:         %loss = tg.reduce_mean %loss_token_loss [0, 1] : tensor<2x4xf32> -> tensor<f32>
// CHECK:         return %loss, %logits : tensor<f32>, tensor<2x4x3xf32>

// The whole step: the gradients of the split parameters are the rank's
// shares, so their squares are summed over "tensor" before the global norm;
// the replicated ones count once.
// STEP-LABEL:  func.func @train_step(
// STEP-SAME:     %mesh_coordinate: tensor<2xi64> {tg.input = "mesh_coordinate"}
// STEP:          tg.micro_batches 1 sliced({{.*}}) shared({{.*}}%mesh_coordinate
// STEP:            tg.pick_grad %{{.+}}, %grad_loss_target_logit_all offset
// STEP:            %grad_h = tg.all_reduce sum %grad_h_tp_in over "tensor"
// STEP:            %grad_ln = tg.all_reduce sum %grad_ln_tp_in over "tensor"
// STEP:            tg.embedding_grad %{{.+}}, %grad_tok_tp_sum offset
// STEP:          %grad_sq_sum_tensor = tg.all_reduce sum %{{.+}} over "tensor" : tensor<f32>
// STEP-NEXT:     %grad_sq_sum{{.*}} = tg.add %{{.+}}, %grad_sq_sum_tensor
// STEP:          %grad_norm = tg.sqrt

// Sequence parallelism: the embedding's partial sum is reduce-scattered
// along the sequence (dim 1, moved to the front around the collective), the
// norm and the residual run on the rank's half of the sequence with their
// weights and bias fanned out, the column-parallel MLP and the LM head read
// the gathered sequence, and the row-parallel product is reduce-scattered
// before its bias.
// SEQ-LABEL:   func.func @forward(
// SEQ:           %tok = tg.embedding %wte[%tokens] offset
// SEQ-NEXT:      %tok_sp_front = tg.transpose %tok [1, 0, 2] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
// SEQ-NEXT:      %tok_sp_scatter = tg.reduce_scatter sum %tok_sp_front over "tensor" : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// SEQ-NEXT:      %tok_sp_back = tg.transpose %tok_sp_scatter [1, 0, 2] : tensor<2x2x8xf32> -> tensor<2x2x8xf32>
// SEQ-NEXT:      %ln = tg.layer_norm %tok_sp_back, %ln_w_tp_in, %ln_b_tp_in {{.*}} -> tensor<2x2x8xf32>
// SEQ-NEXT:      %ln_sp_front = tg.transpose %ln [1, 0, 2]
// SEQ-NEXT:      %ln_sp_gather = tg.all_gather %ln_sp_front over "tensor" : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// SEQ-NEXT:      %ln_sp_back = tg.transpose %ln_sp_gather [1, 0, 2] : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
// SEQ-NEXT:      %fc = tg.matmul %ln_sp_back, %fc_w : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32>
// SEQ:           %proj = tg.matmul %gelu, %proj_w
// SEQ-NEXT:      %proj_sp_front = tg.transpose %proj [1, 0, 2]
// SEQ-NEXT:      %proj_sp_scatter = tg.reduce_scatter sum %proj_sp_front over "tensor"
// SEQ-NEXT:      %proj_sp_back = tg.transpose %proj_sp_scatter
// SEQ-NEXT:      %proj_b{{.*}} = tg.add %proj_sp_back, %proj_b_tp_in : tensor<2x2x8xf32>, tensor<8xf32> -> tensor<2x2x8xf32>
// SEQ-NEXT:      %h = tg.add %tok_sp_back, %proj_b{{.*}} : tensor<2x2x8xf32>, tensor<2x2x8xf32> -> tensor<2x2x8xf32>
// SEQ:           %h_sp_gather = tg.all_gather
// SEQ:           %logits = tg.matmul %h_sp_back, %wte {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<3x8xf32> -> tensor<2x4x3xf32>
// SEQ-NOT:       tg.all_reduce sum %{{.*}} : tensor<2x4x8xf32>
// SEQ:           return %loss, %logits

// Autodiff: an all-gather's VJP is a reduce-scatter, a reduce-scatter's an
// all-gather.
// SEQ-STEP-LABEL: func.func @train_step(
// SEQ-STEP:         tg.reduce_scatter sum %{{.+}} over "tensor" : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// SEQ-STEP:         tg.all_gather %{{.+}} over "tensor" : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// SEQ-STEP:         tg.embedding_grad

// Features the axis does not divide are refused, naming the parameter.
// HEADS: error: 'func.func' op parameter 'transformer.h.0.mlp.c_fc.weight' has 16 features along dim 1, which the mesh axis tp (3 ranks) does not divide
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"} loc("tokens"),
                   %targets: tensor<2x4xi32> {tg.input = "targets"} loc("targets"),
                   %wte: tensor<5x8xf32> {tg.param = "transformer.wte.weight"} loc("wte"),
                   %ln_w: tensor<8xf32> {tg.param = "transformer.ln_f.weight"} loc("ln_w"),
                   %ln_b: tensor<8xf32> {tg.param = "transformer.ln_f.bias"} loc("ln_b"),
                   %fc_w: tensor<8x16xf32> {tg.param = "transformer.h.0.mlp.c_fc.weight"} loc("fc_w"),
                   %fc_b: tensor<16xf32> {tg.param = "transformer.h.0.mlp.c_fc.bias"} loc("fc_b"),
                   %proj_w: tensor<16x8xf32> {tg.param = "transformer.h.0.mlp.c_proj.weight"} loc("proj_w"),
                   %proj_b: tensor<8xf32> {tg.param = "transformer.h.0.mlp.c_proj.bias"} loc("proj_b"))
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x4x5xf32> {tg.output = "logits"}) {
  %0 = tg.embedding %wte[%tokens] : tensor<5x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("tok")
  %1 = tg.layer_norm %0, %ln_w, %ln_b {epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("ln")
  %2 = tg.matmul %1, %fc_w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32> loc("fc")
  %3 = tg.add %2, %fc_b : tensor<2x4x16xf32>, tensor<16xf32> -> tensor<2x4x16xf32> loc("fc_b")
  %4 = tg.gelu %3 tanh : tensor<2x4x16xf32> loc("gelu")
  %5 = tg.matmul %4, %proj_w : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32> loc("proj")
  %6 = tg.add %5, %proj_b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("proj_b")
  %7 = tg.add %0, %6 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("h")
  %8 = tg.matmul %7, %wte {transpose_rhs = true} : tensor<2x4x8xf32>, tensor<5x8xf32> -> tensor<2x4x5xf32> loc("logits")
  %9 = tg.cross_entropy %8, %targets : tensor<2x4x5xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
  return %9, %8 : tensor<f32>, tensor<2x4x5xf32>
}

// -----

// Heads the axis does not divide are refused, naming the count and the axis.
// HEADS: error: 'tg.attention' op has 2 attention heads (num_attention_heads), which the mesh axis tp (3 ranks) does not divide
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"},
                   %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %q: tensor<1x2x4x4xf32> {tg.param = "q"}) -> tensor<f32> {
  %0 = tg.attention %q, %q, %q {scale = 0.5 : f64, causal = true} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %1 = tg.reduce_mean %0 [0, 1, 2, 3] : tensor<1x2x4x4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Sequence parallelism needs a sequence the ranks divide (tokens 2x3; the
// step of seq-len 4 does not take them either).
// STEP-ERR: error: 'func.func' op tokens are 2x3, expected (batch_size / (data_parallel x micro_batches)) x seq_len = 2x4
// SEQ-ERR: error: 'func.func' op cannot be partitioned for sequence parallelism: the sequence (seq_len 3, dim 1 of tg.input "tokens") is not divisible by the mesh axis tp ("tensor") of 2 ranks; make seq_len a multiple of 2
func.func @forward(%tokens: tensor<2x3xi32> {tg.input = "tokens"},
                   %targets: tensor<2x3xi32> {tg.input = "targets"},
                   %w: tensor<3x8xf32> {tg.param = "w"}) -> tensor<f32> {
  %0 = tg.reduce_mean %w [0, 1] : tensor<3x8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

