// Round trip of the function argument and result attributes of the tg
// dialect: tg.param (Hugging Face name), tg.init (#tg.init rule), tg.input
// (data input), tg.state (AdamW moment), tg.updates (result holding the new
// value of a state argument) and tg.output (result name).
// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s -mlir-print-op-generic | tg-opt | FileCheck %s

// CHECK-LABEL: func.func @params
// CHECK-SAME: %{{[^:]+}}: tensor<100x16xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "model.embed_tokens.weight"}
// CHECK-SAME: %{{[^:]+}}: tensor<16xf32> {tg.init = #tg.init<ones>, tg.param = "model.norm.weight"}
// CHECK-SAME: %{{[^:]+}}: tensor<16xf32> {tg.init = #tg.init<zeros>, tg.param = "model.norm.bias"}
// CHECK-SAME: %{{[^:]+}}: tensor<16x16xf32> {tg.init = #tg.init<normal, std = 0.001>, tg.param = "lm_head.weight"}
// CHECK-SAME: %{{[^:]+}}: tensor<16xf32> {tg.param = "no.init.rule"}
// CHECK-SAME: %{{[^:]+}}: tensor<2x8xi64> {tg.input = "tokens"}
// CHECK-SAME: %{{[^:]+}}: tensor<2x8xi64> {tg.input = "targets"}
// CHECK-SAME: %{{[^:]+}}: tensor<i64> {tg.input = "step"}
// CHECK-SAME: %{{[^:]+}}: tensor<f32>)
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<2x8x100xf32> {tg.output = "logits"}, tensor<f32>)
func.func @params(%embed: tensor<100x16xf32> {tg.param = "model.embed_tokens.weight", tg.init = #tg.init<normal, std = 0.02>},
                  %norm_w: tensor<16xf32> {tg.param = "model.norm.weight", tg.init = #tg.init<ones>},
                  %norm_b: tensor<16xf32> {tg.param = "model.norm.bias", tg.init = #tg.init<zeros>},
                  %head: tensor<16x16xf32> {tg.param = "lm_head.weight", tg.init = #tg.init<normal, std = 1.0e-3>},
                  %extra: tensor<16xf32> {tg.param = "no.init.rule"},
                  %tokens: tensor<2x8xi64> {tg.input = "tokens"},
                  %targets: tensor<2x8xi64> {tg.input = "targets"},
                  %step: tensor<i64> {tg.input = "step"},
                  %plain: tensor<f32>)
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x8x100xf32> {tg.output = "logits"}, tensor<f32>) {
  %x = tg.embedding %embed[%tokens] : tensor<100x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %n = tg.layer_norm %x, %norm_w, %norm_b {epsilon = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %h = tg.matmul %n, %head {transpose_rhs = true} : tensor<2x8x16xf32>, tensor<16x16xf32> -> tensor<2x8x16xf32>
  %logits = tg.matmul %h, %embed {transpose_rhs = true} : tensor<2x8x16xf32>, tensor<100x16xf32> -> tensor<2x8x100xf32>
  %loss = tg.cross_entropy %logits, %targets : tensor<2x8x100xf32>, tensor<2x8xi64> -> tensor<f32>
  // CHECK: return
  return %loss, %logits, %plain : tensor<f32>, tensor<2x8x100xf32>, tensor<f32>
}

// Attributes of other dialects and unprefixed names pass through untouched.
// CHECK-LABEL: func.func @other_attrs
// CHECK-SAME: (%{{[^:]+}}: tensor<4xf32> {other.attr = 1 : i64, tg.param = "w"}) -> (tensor<4xf32> {other.name = "y", tg.output = "y"})
func.func @other_attrs(%w: tensor<4xf32> {tg.param = "w", other.attr = 1}) -> (tensor<4xf32> {tg.output = "y", other.name = "y"}) {
  return %w : tensor<4xf32>
}

// The AdamW step's signature: moments carry tg.state, updated state results
// tg.updates naming the argument they replace, scalars tg.output.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{[^:]+}}: tensor<4xf32> {tg.init = #tg.init<normal, std = 0.0025>, tg.param = "w"}
// CHECK-SAME: %{{[^:]+}}: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">}
// CHECK-SAME: %{{[^:]+}}: tensor<4xf32> {tg.state = #tg.state<adam_v, "w">}
// CHECK-SAME: -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">}, tensor<4xf32> {tg.updates = #tg.state<adam_m, "w">}, tensor<4xf32> {tg.updates = #tg.state<adam_v, "w">}, tensor<f32> {tg.output = "loss"})
func.func @step(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 2.5e-3>},
                %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">},
                %v: tensor<4xf32> {tg.state = #tg.state<adam_v, "w">},
                %loss: tensor<f32>)
    -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">},
        tensor<4xf32> {tg.updates = #tg.state<adam_m, "w">},
        tensor<4xf32> {tg.updates = #tg.state<adam_v, "w">},
        tensor<f32> {tg.output = "loss"}) {
  return %w, %m, %v, %loss : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// A ZeRO-1 moment (tg.optimizer_shard): the rank's chunk of 3 of the parameter's 5 elements.
// CHECK-LABEL: func.func @optimizer_shard
// CHECK-SAME: %{{[^:]+}}: tensor<3xf32> {tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>, tg.state = #tg.state<adam_m, "w">}
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
func.func @optimizer_shard(%w: tensor<5xf32> {tg.param = "w"},
                           %m: tensor<3xf32> {tg.state = #tg.state<adam_m, "w">, tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>}) {
  return
}
}
