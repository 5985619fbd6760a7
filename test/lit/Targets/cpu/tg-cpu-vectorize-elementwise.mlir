// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-cpu-vectorize-elementwise))' | FileCheck %s

// Whole buffers and a scalar (read once, broadcast): a parallel loop over
// vectors of 8 of the flat buffers, and the 4 remaining elements one by one.
// The output may be an input's buffer (state updated in place): each vector
// is loaded before the store.
// CHECK-LABEL: func.func @axpy
// CHECK-DAG: %[[X:.*]] = memref.collapse_shape %arg0
// CHECK-DAG: %[[A:.*]] = memref.load %{{.*}}[%c0]
// CHECK: scf.parallel (%[[V:.*]]) = (%c0{{.*}}) to (%c8{{.*}}) step (%c1{{.*}})
// CHECK: %[[I:.*]] = arith.muli %[[V]], %c8
// CHECK: %[[XV:.*]] = vector.load %[[X]][%[[I]]] : memref<68xf32>, vector<8xf32>
// CHECK: %[[AV:.*]] = vector.broadcast %[[A]] : f32 to vector<8xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[XV]], %[[AV]] : vector<8xf32>
// CHECK: vector.store %{{.*}}, %{{.*}}[%[[I]]] : memref<68xf32>, vector<8xf32>
// CHECK: scf.for %[[J:.*]] = %c64 to %c68
// CHECK: memref.load %[[X]][%[[J]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[J]]] : memref<68xf32>
// CHECK-NOT: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @axpy(%x: memref<4x17xf32>, %a: memref<f32>, %y: memref<4x17xf32>) {
  linalg.generic {indexing_maps = [#id, #scalar, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %a, %y : memref<4x17xf32>, memref<f32>, memref<4x17xf32>) outs(%y : memref<4x17xf32>) {
  ^bb0(%xi: f32, %ai: f32, %yi: f32, %out: f32):
    %0 = arith.mulf %xi, %ai : f32
    %1 = arith.addf %0, %yi : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Broadcasts along a dim (a bias over rows) and transposes are left to LLVM.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @left_alone(%x: memref<4x8xf32>, %b: memref<8xf32>, %y: memref<4x8xf32>, %z: memref<8x4xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<4x8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%xi: f32, %bi: f32, %out: f32):
    %0 = arith.addf %xi, %bi : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : memref<8x4xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%zi: f32, %out: f32):
    linalg.yield %zi : f32
  }
  return
}
