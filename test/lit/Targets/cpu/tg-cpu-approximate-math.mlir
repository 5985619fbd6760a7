// RUN: tg-opt %s --split-input-file --tg-cpu-approximate-math | FileCheck %s

// f32 exp, log, tanh and erf become polynomials (no libm call left for LLVM
// to stop vectorizing at); f64 keeps the exact functions.
// CHECK-LABEL: func.func @f32
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.log
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         return
func.func @f32(%x: f32) -> (f32, f32, f32, f32) {
  %e = math.exp %x : f32
  %l = math.log %x : f32
  %t = math.tanh %x : f32
  %r = math.erf %x : f32
  return %e, %l, %t, %r : f32, f32, f32, f32
}

// -----

// CHECK-LABEL: func.func @f64
// CHECK:         math.exp %{{.+}} : f64
// CHECK:         math.tanh %{{.+}} : f64
func.func @f64(%x: f64) -> (f64, f64) {
  %e = math.exp %x : f64
  %t = math.tanh %x : f64
  return %e, %t : f64, f64
}

// -----

// A vector exp, alone in its module: the polynomial's arith and vector ops
// are loaded by the pass itself (it crashed creating them before).
// CHECK-LABEL: func.func @vector
// CHECK-NOT:     math.exp
// CHECK:         math.fma {{.*}} : vector<16xf32>
func.func @vector(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
}
