// tg-carry-compute-copies: the narrowing casts of an updated f32 parameter
// become an argument #tg.state<compute, NAME> and the cast of its new value
// a result with tg.updates of that state, each after the other state
// arguments and updates. What is not carried: parameters without an update
// or whose new value is not computed elementwise, casts to two types,
// widening casts, masters other than f32, a parameter with its copy already.
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

// f16 copies too.
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

// Not carried: w without an update (a function without an optimizer), v
// cast to bf16 and to f16, u only widened, d an f64 master, z whose new
// value is not computed elementwise (ZeRO-1 all-gathers it: a cast of it
// would stay a kernel of its own, not join the update's).
// CHECK-LABEL: func.func @not_carried
// CHECK-NOT: compute
// CHECK: tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
// CHECK: tg.cast %v : tensor<4xf32> -> tensor<4xbf16>
// CHECK: tg.cast %v : tensor<4xf32> -> tensor<4xf16>
// CHECK: tg.cast %u : tensor<4xf32> -> tensor<4xf64>
// CHECK: tg.cast %d : tensor<4xf64> -> tensor<4xbf16>
// CHECK: tg.cast %z : tensor<4xf32> -> tensor<4xbf16>
func.func @not_carried(%w: tensor<4xf32> {tg.param = "w"} loc("w"), %v: tensor<4xf32> {tg.param = "v"} loc("v"),
                       %u: tensor<4xf32> {tg.param = "u"} loc("u"), %d: tensor<4xf64> {tg.param = "d"} loc("d"),
                       %z: tensor<4xf32> {tg.param = "z"} loc("z"))
    -> (tensor<4xbf16> {tg.output = "a"}, tensor<4xf32> {tg.updates = #tg.state<param, "v">},
        tensor<4xbf16> {tg.output = "b"}, tensor<4xf16> {tg.output = "c"},
        tensor<4xf32> {tg.updates = #tg.state<param, "u">}, tensor<4xf64> {tg.output = "e"},
        tensor<4xf64> {tg.updates = #tg.state<param, "d">}, tensor<4xbf16> {tg.output = "f"},
        tensor<4xf32> {tg.updates = #tg.state<param, "z">}, tensor<4xbf16> {tg.output = "g"}) {
  %a = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  %b = tg.cast %v : tensor<4xf32> -> tensor<4xbf16>
  %c = tg.cast %v : tensor<4xf32> -> tensor<4xf16>
  %e = tg.cast %u : tensor<4xf32> -> tensor<4xf64>
  %f = tg.cast %d : tensor<4xf64> -> tensor<4xbf16>
  %g = tg.cast %z : tensor<4xf32> -> tensor<4xbf16>
  %vn = tg.neg %v : tensor<4xf32>
  %un = tg.neg %u : tensor<4xf32>
  %dn = tg.neg %d : tensor<4xf64>
  %zr = tg.reshape %z : tensor<4xf32> -> tensor<2x2xf32>
  %zn = tg.reshape %zr : tensor<2x2xf32> -> tensor<4xf32>
  return %a, %vn, %b, %c, %un, %e, %dn, %f, %zn, %g : tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>, tensor<4xf64>, tensor<4xf64>, tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>
}

// -----

// Two parameters after an input argument: their copies in parameter order
// after the last parameter or state argument, their new values after the
// last update.
// CHECK-LABEL: func.func @two
// CHECK-SAME: (%x: tensor<4xbf16> {tg.input = "x"}, %a: tensor<4xf32> {tg.param = "a"}, %b: tensor<4xf32> {tg.param = "b"}, %a_compute: tensor<4xbf16> {tg.state = #tg.state<compute, "a">}, %b_compute: tensor<4xbf16> {tg.state = #tg.state<compute, "b">})
// CHECK-SAME: -> (tensor<4xf32> {tg.updates = #tg.state<param, "b">}, tensor<4xf32> {tg.updates = #tg.state<param, "a">}, tensor<4xbf16> {tg.updates = #tg.state<compute, "a">}, tensor<4xbf16> {tg.updates = #tg.state<compute, "b">}, tensor<4xbf16> {tg.output = "y"})
// CHECK: %y = tg.add %a_compute, %b_compute
// CHECK: return %b_new, %a_new, %a_new_compute, %b_new_compute, %y
func.func @two(%x: tensor<4xbf16> {tg.input = "x"} loc("x"), %a: tensor<4xf32> {tg.param = "a"} loc("a"),
               %b: tensor<4xf32> {tg.param = "b"} loc("b"))
    -> (tensor<4xf32> {tg.updates = #tg.state<param, "b">}, tensor<4xf32> {tg.updates = #tg.state<param, "a">},
        tensor<4xbf16> {tg.output = "y"}) {
  %ac = tg.cast %a : tensor<4xf32> -> tensor<4xbf16> loc("a_compute")
  %bc = tg.cast %b : tensor<4xf32> -> tensor<4xbf16> loc("b_compute")
  %y = tg.add %ac, %bc : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16> loc("y")
  %an = tg.neg %a : tensor<4xf32> loc("a_new")
  %bn = tg.neg %b : tensor<4xf32> loc("b_new")
  return %bn, %an, %y : tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>
}
