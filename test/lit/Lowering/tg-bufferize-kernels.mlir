// RUN: tg-opt %s --split-input-file --tg-bufferize-kernels | FileCheck %s

// A one-op kernel: tensors in, tensors out become memref inputs then one
// memref output per result (destination-passing style); the op's loops are
// written straight into the output.
// CHECK-LABEL: module @kernels
// CHECK:         func.func @k0_add(%[[A:.+]]: memref<2x8xf32>, %[[B:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<2x8xf32>) {
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[A]], %[[B]] : memref<2x8xf32>, memref<8xf32>) outs(%[[OUT]] : memref<2x8xf32>)
// CHECK:             arith.addf
// CHECK:         return
module @kernels {
  func.func @k0_add(%a: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
    %c = tg.add %a, %b : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    return %c : tensor<2x8xf32>
  }
}

// -----

// A multi-op kernel (what fusion will form): the intermediate value lives in
// a local buffer freed at the end, the result in the output; a value
// returned twice is computed once and copied into the second output, and a
// returned argument is copied.
// CHECK-LABEL: func.func @k1_fused(
// CHECK-SAME:      %[[X:[^:]+]]: memref<4x8xf32>, %[[O0:[^:]+]]: memref<4x8xf32>, %[[O1:[^:]+]]: memref<4x8xf32>, %[[O2:[^:]+]]: memref<4x8xf32>)
// CHECK:         %[[TMP:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<4x8xf32>) outs(%[[TMP]] : memref<4x8xf32>)
// CHECK:           math.exp
// CHECK:         memref.collapse_shape %[[TMP]]
// CHECK:         memref.collapse_shape %[[O0]]
// CHECK:         scf.for
// CHECK:         linalg.copy ins(%[[O0]] : memref<4x8xf32>) outs(%[[O1]] : memref<4x8xf32>)
// CHECK:         linalg.copy ins(%[[X]] : memref<4x8xf32>) outs(%[[O2]] : memref<4x8xf32>)
// CHECK:         memref.dealloc %[[TMP]]
// CHECK-NEXT:    return
module @kernels {
  func.func @k1_fused(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
    %e = tg.exp %x : tensor<4x8xf32>
    %s = tg.softmax %e : tensor<4x8xf32>
    return %s, %s, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// Kernels already on memrefs are left alone.
// CHECK-LABEL: func.func @k2_done(%{{.+}}: memref<4xf32>, %{{.+}}: memref<4xf32>) {
// CHECK-NEXT:    return
module @kernels {
  func.func @k2_done(%a: memref<4xf32>, %b: memref<4xf32>) {
    return
  }
}
