// tg-carry-compute-copies: the narrowing casts of an updated parameter
// become an argument #tg.state<compute, NAME> (after the other state,
// before the inputs) and the cast of the new value a result with tg.updates
// of that state (before the outputs). What is not carried: parameters
// without an update, casts to two types, widening casts, a parameter that
// has its copy already.
// RUN: tg-opt %s --tg-carry-compute-copies --split-input-file --mlir-use-nameloc-as-prefix | FileCheck %s
// Running it again changes nothing.
// RUN: tg-opt %s --tg-carry-compute-copies --tg-carry-compute-copies --split-input-file --mlir-use-nameloc-as-prefix | FileCheck %s

// Both casts of w read the copy; b (f32 in the step) and the moment are
// left alone; the copy's new value is the cast of w's.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%w: tensor<4x2xf32> {tg.param = "w"}, %b: tensor<2xf32> {tg.param = "b"}, %m: tensor<4x2xf32> {tg.state = #tg.state<adam_m, "w">}, %w_compute: tensor<4x2xbf16> {tg.state = #tg.state<compute, "w">}, %x: tensor<3x4xbf16> {tg.input = "x"})
// CHECK-SAME: -> (tensor<4x2xf32> {tg.updates = #tg.state<param, "w">}, tensor<2xf32> {tg.updates = #tg.state<param, "b">}, tensor<4x2xf32> {tg.updates = #tg.state<adam_m, "w">}, tensor<4x2xbf16> {tg.updates = #tg.state<compute, "w">}, tensor<3x2xbf16> {tg.output = "y"})
// CHECK-NOT: tg.cast %w :
// CHECK: %y = tg.matmul %x, %w_compute
// CHECK: %y2 = tg.matmul %x, %w_compute
// CHECK: %w_new = tg.sub %w, %m
// CHECK-NEXT: %w_new_compute = tg.cast %w_new : tensor<4x2xf32> -> tensor<4x2xbf16>
// CHECK-NEXT: return %w_new, %b, %m, %w_new_compute, %y2
func.func @step(%w: tensor<4x2xf32> {tg.param = "w"} loc("w"), %b: tensor<2xf32> {tg.param = "b"} loc("b"),
                %m: tensor<4x2xf32> {tg.state = #tg.state<adam_m, "w">} loc("m"),
                %x: tensor<3x4xbf16> {tg.input = "x"} loc("x"))
    -> (tensor<4x2xf32> {tg.updates = #tg.state<param, "w">}, tensor<2xf32> {tg.updates = #tg.state<param, "b">},
        tensor<4x2xf32> {tg.updates = #tg.state<adam_m, "w">}, tensor<3x2xbf16> {tg.output = "y"}) {
  %wc = tg.cast %w : tensor<4x2xf32> -> tensor<4x2xbf16> loc("w_compute")
  %y = tg.matmul %x, %wc : tensor<3x4xbf16>, tensor<4x2xbf16> -> tensor<3x2xbf16> loc("y")
  %wc2 = tg.cast %w : tensor<4x2xf32> -> tensor<4x2xbf16> loc("w_compute2")
  %y2 = tg.matmul %x, %wc2 : tensor<3x4xbf16>, tensor<4x2xbf16> -> tensor<3x2xbf16> loc("y2")
  %wn = tg.sub %w, %m : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32> loc("w_new")
  return %wn, %b, %m, %y2 : tensor<4x2xf32>, tensor<2xf32>, tensor<4x2xf32>, tensor<3x2xbf16>
}

// -----

// f16 copies too; without inputs or outputs the copies come last.
// CHECK-LABEL: func.func @half
// CHECK-SAME: (%w: tensor<4xf32> {tg.param = "w"}, %w_half: tensor<4xf16> {tg.state = #tg.state<compute, "w">})
// CHECK-SAME: -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">}, tensor<4xf16> {tg.updates = #tg.state<compute, "w">})
// CHECK-NEXT: %w_new = tg.exp %w_half
// CHECK-NEXT: %[[UP:.+]] = tg.cast %w_new : tensor<4xf16> -> tensor<4xf32>
// CHECK-NEXT: %[[COPY:.+]] = tg.cast %[[UP]] : tensor<4xf32> -> tensor<4xf16>
// CHECK-NEXT: return %[[UP]], %[[COPY]]
func.func @half(%w: tensor<4xf32> {tg.param = "w"} loc("w"))
    -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">}) {
  %h = tg.cast %w : tensor<4xf32> -> tensor<4xf16> loc("w_half")
  %e = tg.exp %h : tensor<4xf16> loc("w_new")
  %u = tg.cast %e : tensor<4xf16> -> tensor<4xf32>
  return %u : tensor<4xf32>
}

// -----

// Not carried: no update of w (a function without an optimizer), v cast to
// bf16 and to f16, u only widened.
// CHECK-LABEL: func.func @not_carried
// CHECK-SAME: (%w: tensor<4xf32> {tg.param = "w"}, %v: tensor<4xf32> {tg.param = "v"}, %u: tensor<4xf32> {tg.param = "u"})
// CHECK-NOT: compute
// CHECK: tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
// CHECK: tg.cast %v : tensor<4xf32> -> tensor<4xbf16>
// CHECK: tg.cast %v : tensor<4xf32> -> tensor<4xf16>
// CHECK: tg.cast %u : tensor<4xf32> -> tensor<4xf64>
func.func @not_carried(%w: tensor<4xf32> {tg.param = "w"} loc("w"), %v: tensor<4xf32> {tg.param = "v"} loc("v"),
                       %u: tensor<4xf32> {tg.param = "u"} loc("u"))
    -> (tensor<4xbf16> {tg.output = "a"}, tensor<4xf32> {tg.updates = #tg.state<param, "v">},
        tensor<4xbf16> {tg.output = "b"}, tensor<4xf16> {tg.output = "c"},
        tensor<4xf32> {tg.updates = #tg.state<param, "u">}, tensor<4xf64> {tg.output = "d"}) {
  %a = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  %b = tg.cast %v : tensor<4xf32> -> tensor<4xbf16>
  %c = tg.cast %v : tensor<4xf32> -> tensor<4xf16>
  %d = tg.cast %u : tensor<4xf32> -> tensor<4xf64>
  return %a, %v, %b, %c, %u, %d : tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf64>
}
