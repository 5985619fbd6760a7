// Forwards for the ZeRO-1 cases of tg-build-train-step.mlir.

// Data parallel only: a matrix and an unevenly split bias (5 elements).
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>},
                   %head: tensor<8x5xf32> {tg.param = "head", tg.init = #tg.init<normal, std = 0.02>},
                   %head_b: tensor<5xf32> {tg.param = "head_b", tg.init = #tg.init<zeros>})
    -> (tensor<f32> {tg.output = "loss"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %y = tg.matmul %h, %head : tensor<2x4x8xf32>, tensor<8x5xf32> -> tensor<2x4x5xf32>
  %z = tg.add %y, %head_b : tensor<2x4x5xf32>, tensor<5xf32> -> tensor<2x4x5xf32>
  %l = tg.cross_entropy %z, %targets : tensor<2x4x5xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A partitioned forward on dp=2 x tp=2: wte replicated over "tensor", fc_w
// split along dim 1.
module attributes {tg.mesh_axes = ["data", "tensor"], tg.mesh_shape = array<i64: 2, 2>} {
func.func @forward(%tokens: tensor<2x4xi32> {tg.input = "tokens"}, %targets: tensor<2x4xi32> {tg.input = "targets"},
                   %wte: tensor<8x8xf32> {tg.param = "wte", tg.init = #tg.init<normal, std = 0.02>},
                   %fc_w: tensor<8x4xf32> {tg.param = "fc_w", tg.init = #tg.init<normal, std = 0.02>,
                                           tg.shard = #tg.shard<axis = "tensor", dim = 1, fullShape = [8, 8], paddedSize = 8, blocks = 1>},
                   %mesh_coordinate: tensor<2xi64> {tg.input = "mesh_coordinate"})
    -> (tensor<f32> {tg.output = "loss"}) {
  %h = tg.embedding %wte[%tokens] : tensor<8x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32>
  %x = tg.grad_all_reduce %h over "tensor" : tensor<2x4x8xf32>
  %y = tg.matmul %x, %fc_w : tensor<2x4x8xf32>, tensor<8x4xf32> -> tensor<2x4x4xf32>
  %l = tg.cross_entropy %y, %targets : tensor<2x4x4xf32>, tensor<2x4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
}
