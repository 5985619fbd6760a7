// tg-unroll-micro-batches: one clone of the body per micro-batch on tg.slice
// views of the sliced operands, the yielded values summed in micro-batch
// order, then multiplied by 1/count. New ops are named after the sliced
// operand ("x_mb1") and the result NameLocs of the op's fused location
// ("loss_sum", "loss").
// RUN: tg-opt %s --tg-unroll-micro-batches --split-input-file --mlir-use-nameloc-as-prefix | FileCheck %s

// count 1: no slice, no sum, no scaling: the body runs on the operands and
// its yielded values replace the results.
// CHECK-LABEL: func.func @count_one
// CHECK-SAME: (%x: tensor<2x2xf32>, %w: tensor<2xf32>)
// CHECK-NOT: tg.micro_batches
// CHECK-NOT: tg.slice
// CHECK-NEXT: %[[Y:.+]] = tg.mul %x, %w
// CHECK-NEXT: %[[L:.+]] = tg.reduce_sum %[[Y]] [0, 1]
// CHECK-NEXT: %[[G:.+]] = tg.reduce_sum %[[Y]] [0]
// CHECK-NEXT: return %[[L]], %[[G]] : tensor<f32>, tensor<2xf32>
func.func @count_one(%x: tensor<2x2xf32> loc("x"), %w: tensor<2xf32> loc("w")) -> (tensor<f32>, tensor<2xf32>) {
  %l, %g = tg.micro_batches 1 sliced(%x : tensor<2x2xf32>) shared(%w : tensor<2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>, %ws: tensor<2xf32>):
    %y = tg.mul %xs, %ws : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
    %ls = tg.reduce_sum %y [0, 1] : tensor<2x2xf32> -> tensor<f32>
    %gs = tg.reduce_sum %y [0] : tensor<2x2xf32> -> tensor<2xf32>
    tg.yield %ls, %gs : tensor<f32>, tensor<2xf32>
  } -> tensor<f32>, tensor<2xf32> loc(fused["loss", "grad_w"])
  return %l, %g : tensor<f32>, tensor<2xf32>
}

// -----

// count 3 with two sliced and two shared operands (one unused by the
// body, one yielded as is): slices at rows 0, 2, 4; sums in micro-batch
// order; one 1/3 constant shared by both results.
// CHECK-LABEL: func.func @count_three
// CHECK-SAME: (%x: tensor<6x2xf32>, %t: tensor<6xi32>, %w: tensor<2xf32>, %u: tensor<f32>)
// CHECK-NEXT: %x_mb0 = tg.slice %x{{\[}}[0, 0]] {{\[}}[2, 2]]
// CHECK-NEXT: %t_mb0 = tg.slice %t{{\[}}[0]] {{\[}}[2]]
// CHECK-NEXT: %[[Y0:.+]] = tg.mul %x_mb0, %w
// CHECK-NEXT: %[[L0:.+]] = tg.reduce_sum %[[Y0]] [0, 1]
// CHECK-NEXT: %x_mb1 = tg.slice %x{{\[}}[2, 0]] {{\[}}[2, 2]]
// CHECK-NEXT: %t_mb1 = tg.slice %t{{\[}}[2]] {{\[}}[2]]
// CHECK-NEXT: %[[Y1:.+]] = tg.mul %x_mb1, %w
// CHECK-NEXT: %[[L1:.+]] = tg.reduce_sum %[[Y1]] [0, 1]
// CHECK-NEXT: %loss_sum = tg.add %[[L0]], %[[L1]]
// CHECK-NEXT: %grad_w_sum = tg.add %w, %w
// CHECK-NEXT: %x_mb2 = tg.slice %x{{\[}}[4, 0]] {{\[}}[2, 2]]
// CHECK-NEXT: %t_mb2 = tg.slice %t{{\[}}[4]] {{\[}}[2]]
// CHECK-NEXT: %[[Y2:.+]] = tg.mul %x_mb2, %w
// CHECK-NEXT: %[[L2:.+]] = tg.reduce_sum %[[Y2]] [0, 1]
// CHECK-NEXT: %loss_sum_0 = tg.add %loss_sum, %[[L2]]
// CHECK-NEXT: %grad_w_sum_1 = tg.add %grad_w_sum, %w
// CHECK-NEXT: %[[INV:.+]] = tg.constant dense<0.333333343> : tensor<f32>
// CHECK-NEXT: %loss = tg.mul %loss_sum_0, %[[INV]]
// CHECK-NEXT: %grad_w = tg.mul %grad_w_sum_1, %[[INV]]
// CHECK-NEXT: return %loss, %grad_w, %u
func.func @count_three(%x: tensor<6x2xf32> loc("x"), %t: tensor<6xi32> loc("t"),
                       %w: tensor<2xf32> loc("w"), %u: tensor<f32> loc("u"))
    -> (tensor<f32>, tensor<2xf32>, tensor<f32>) {
  %l, %g = tg.micro_batches 3 sliced(%x, %t : tensor<6x2xf32>, tensor<6xi32>)
                              shared(%w, %u : tensor<2xf32>, tensor<f32>) {
  ^bb0(%xs: tensor<2x2xf32>, %ts: tensor<2xi32>, %ws: tensor<2xf32>, %us: tensor<f32>):
    %y = tg.mul %xs, %ws : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32>
    %ls = tg.reduce_sum %y [0, 1] : tensor<2x2xf32> -> tensor<f32>
    tg.yield %ls, %ws : tensor<f32>, tensor<2xf32>
  } -> tensor<f32>, tensor<2xf32> loc(fused["loss", "grad_w"])
  return %l, %g, %u : tensor<f32>, tensor<2xf32>, tensor<f32>
}
