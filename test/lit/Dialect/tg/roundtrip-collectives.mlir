// Round trip of tg.all_reduce, tg.reduce_scatter, tg.all_gather and of the module's device mesh
// (tg.mesh_axes, tg.mesh_shape).
// RUN: tg-opt %s | tg-opt | FileCheck %s
// RUN: tg-opt %s -mlir-print-op-generic | tg-opt | FileCheck %s

// CHECK: module attributes {tg.mesh_axes = ["data", "tensor"], tg.mesh_shape = array<i64: 4, 2>}
module attributes {tg.mesh_axes = ["data", "tensor"], tg.mesh_shape = array<i64: 4, 2>} {
  // CHECK-LABEL: func.func @reductions
  // CHECK: tg.all_reduce sum %{{.*}} over "data" : tensor<4x8xf32>
  // CHECK: tg.all_reduce avg %{{.*}} over "data" : tensor<4x8xf32>
  // CHECK: tg.all_reduce max %{{.*}} over "tensor" : tensor<4x8xf32>
  // CHECK: tg.all_reduce min %{{.*}} over "tensor" : tensor<4x8xf32>
  func.func @reductions(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %s = tg.all_reduce sum %x over "data" : tensor<4x8xf32>
    %a = tg.all_reduce avg %s over "data" : tensor<4x8xf32>
    %m = tg.all_reduce max %a over "tensor" : tensor<4x8xf32>
    %n = tg.all_reduce min %m over "tensor" : tensor<4x8xf32>
    return %n : tensor<4x8xf32>
  }

  // Blocks along dim 0: "data" has 4 ranks, "tensor" 2.
  // CHECK-LABEL: func.func @blocks
  // CHECK: tg.reduce_scatter avg %{{.*}} over "data" : tensor<8x3xf32> -> tensor<2x3xf32>
  // CHECK: tg.all_gather %{{.*}} over "tensor" : tensor<2x3xf32> -> tensor<4x3xf32>
  func.func @blocks(%x: tensor<8x3xf32>) -> tensor<4x3xf32> {
    %s = tg.reduce_scatter avg %x over "data" : tensor<8x3xf32> -> tensor<2x3xf32>
    %g = tg.all_gather %s over "tensor" : tensor<2x3xf32> -> tensor<4x3xf32>
    return %g : tensor<4x3xf32>
  }

  // Every float type, scalars too.
  // CHECK-LABEL: func.func @types
  // CHECK: tg.all_reduce avg %{{.*}} over "data" : tensor<bf16>
  // CHECK: tg.all_reduce sum %{{.*}} over "data" : tensor<3xf64>
  func.func @types(%x: tensor<bf16>, %y: tensor<3xf64>) -> (tensor<bf16>, tensor<3xf64>) {
    %a = tg.all_reduce avg %x over "data" : tensor<bf16>
    %b = tg.all_reduce sum %y over "data" : tensor<3xf64>
    return %a, %b : tensor<bf16>, tensor<3xf64>
  }
}

// -----

// A module without a mesh runs on one device: any axis name is accepted
// (the op is the identity there).
// CHECK-LABEL: func.func @no_mesh
// CHECK: tg.all_reduce avg %{{.*}} over "data" : tensor<8xf32>
func.func @no_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = tg.all_reduce avg %x over "data" : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// Without a mesh the blocks are the whole tensor.
// CHECK-LABEL: func.func @no_mesh_blocks
// CHECK: tg.reduce_scatter sum %{{.*}} over "data" : tensor<8xf32> -> tensor<8xf32>
// CHECK: tg.all_gather %{{.*}} over "data" : tensor<8xf32> -> tensor<8xf32>
func.func @no_mesh_blocks(%x: tensor<8xf32>) -> tensor<8xf32> {
  %s = tg.reduce_scatter sum %x over "data" : tensor<8xf32> -> tensor<8xf32>
  %g = tg.all_gather %s over "data" : tensor<8xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}
