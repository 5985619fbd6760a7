// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-form-dispatch-regions))' | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-form-dispatch-regions{library-gemm=false}))' | FileCheck %s --check-prefix=GEN

// Each op that becomes generated code gets its own region, capturing its
// operands from above; constants, reshapes (views) and library matmuls stay
// outside. With generated GEMMs the matmul is a region too.
// CHECK-LABEL: func.func @linear
// CHECK:         %[[C:.+]] = tg.constant
// CHECK:         %[[Y:.+]] = tg.matmul %arg1, %arg0
// CHECK:         %[[Z:.+]] = exec.dispatch_region -> (tensor<2x8xf32>) {
// CHECK-NEXT:      %[[ADD:.+]] = tg.add %[[Y]], %arg2
// CHECK-NEXT:      exec.yield %[[ADD]] : tensor<2x8xf32>
// CHECK-NEXT:    }
// CHECK:         %[[S:.+]] = exec.dispatch_region -> (tensor<2x8xf32>) {
// CHECK-NEXT:      %[[MUL:.+]] = tg.mul %[[Z]], %[[C]]
// CHECK-NEXT:      exec.yield %[[MUL]]
// CHECK:         %[[R:.+]] = tg.reshape %[[S]]
// CHECK:         return %[[R]]
// GEN-LABEL: func.func @linear
// GEN:         exec.dispatch_region -> (tensor<2x8xf32>) {
// GEN-NEXT:      tg.matmul
func.func @linear(%w: tensor<4x8xf32>, %x: tensor<2x4xf32>, %b: tensor<8xf32>) -> tensor<16xf32> {
  %c = tg.constant dense<2.0> : tensor<8xf32>
  %y = tg.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
  %z = tg.add %y, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %s = tg.mul %z, %c : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %r = tg.reshape %s : tensor<2x8xf32> -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// An op with several results yields them all from one region.
// CHECK-LABEL: func.func @norm_grad
// CHECK:         %[[G:.+]]:3 = exec.dispatch_region -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:      %[[DX:.+]], %[[DW:.+]], %[[DB:.+]] = tg.layer_norm_grad
// CHECK-NEXT:      exec.yield %[[DX]], %[[DW]], %[[DB]]
// CHECK:         return %[[G]]#0, %[[G]]#1, %[[G]]#2
func.func @norm_grad(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %dx, %dw, %db : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Attention has no kernel of its own (tg-decompose-attention rewrites it):
// it is left outside, for tg-lower-to-exec to report.
// CHECK-LABEL: func.func @attention
// CHECK-NOT:     exec.dispatch_region
// CHECK:         tg.attention
func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %o = tg.attention %q, %k, %v {scale = 0.35355339 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A collective is a command of its own, not a kernel: it stays outside.
// CHECK-LABEL: func.func @all_reduce
// CHECK:         %[[SQ:.+]] = exec.dispatch_region -> (tensor<8xf32>) {
// CHECK-NEXT:      tg.mul
// CHECK:         %[[AVG:.+]] = tg.all_reduce avg %[[SQ]] over "data" : tensor<8xf32>
// CHECK-NEXT:    return %[[AVG]]
func.func @all_reduce(%g: tensor<8xf32>) -> tensor<8xf32> {
  %sq = tg.mul %g, %g : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  %avg = tg.all_reduce avg %sq over "data" : tensor<8xf32>
  return %avg : tensor<8xf32>
}

// -----

// With library-attention (tgc --cuda-attention=flash) flash attention is the
// runtime's kernels, not generated code: it stays outside, for
// tg-lower-to-exec's exec.attention. Without it, it is a kernel.
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-form-dispatch-regions{library-attention=true}))' | FileCheck %s --check-prefix=LIBRARY
// LIBRARY-LABEL: func.func @flash
// LIBRARY-NOT:     exec.dispatch_region
// LIBRARY:         tg.flash_attention
// CHECK-LABEL: func.func @flash
// CHECK:         exec.dispatch_region -> (tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>)
// CHECK-NEXT:      tg.flash_attention
func.func @flash(%q: tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16> {
  %o, %lse = tg.flash_attention %q, %q, %q {scale = 0.125 : f64} : tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16> -> tensor<1x2x64x64xbf16>, tensor<1x2x64xf32>
  return %o : tensor<1x2x64x64xbf16>
}
