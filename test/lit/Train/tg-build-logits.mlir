// RUN: tg-opt %s --split-input-file --verify-diagnostics --mlir-use-nameloc-as-prefix \
// RUN:   --tg-build-logits | FileCheck %s

// @logits beside @forward: only the ops the logits depend on (no loss, no
// targets), for one micro-batch, parameters and logits in the loss's
// precision (f32 masters; the bf16 forward casts them and its logits).
// CHECK-LABEL: func.func @logits(
// CHECK-SAME:    %wte: tensor<8x8xf32> {tg.init = #tg.init<normal, std = 0.02>, tg.param = "wte"}
// CHECK-SAME:    %tokens: tensor<2x4xi32> {tg.input = "tokens"})
// CHECK-SAME:    -> (tensor<2x4x8xf32> {tg.output = "logits"})
// CHECK:         %param_compute = tg.cast %wte : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK:         %[[H:.+]] = tg.embedding %param_compute[%tokens]
// CHECK-NOT:     tg.cross_entropy
// CHECK:         %logits_master = tg.cast %[[H]] : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK:         return %logits_master
// CHECK-LABEL: func.func @forward(
// CHECK:         tg.cross_entropy
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xbf16> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x4x8xbf16> {tg.output = "logits"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xbf16>, tensor<2x4xi32> -> tensor<2x4x8xbf16>
  %f = tg.cast %h : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %f, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l, %h : tensor<f32>, tensor<2x4x8xbf16>
}

// -----

// A forward without logits has nothing to generate from.
// expected-error @+1 {{must return the [batch, seq, vocab] logits second to build the logits function}}
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %h, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A partitioned forward holds part of the logits: one device only.
module attributes {tg.mesh_axes = ["tensor"], tg.mesh_shape = array<i64: 2>} {
// expected-error @+1 {{@forward is laid out on the mesh ["tensor"] = [2]: the logits function is built for one device}}
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x4x8xf32> {tg.output = "logits"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %h, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l, %h : tensor<f32>, tensor<2x4x8xf32>
}
}

// -----

// A mesh of one device (tgc --mesh dp=1) is one device.
// CHECK-LABEL: func.func @logits(
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 1>} {
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>})
    -> (tensor<f32> {tg.output = "loss"}, tensor<2x4x8xf32> {tg.output = "logits"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %l = tg.cross_entropy %h, %targets : tensor<2x4x8xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l, %h : tensor<f32>, tensor<2x4x8xf32>
}
}
