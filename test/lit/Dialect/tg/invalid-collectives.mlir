// Errors of tg.all_reduce, tg.reduce_scatter, tg.all_gather and of the module's device mesh (TgDialect.cpp,
// TgOps.cpp).
// RUN: tg-opt %s -split-input-file -verify-diagnostics

module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
  func.func @unknown_axis(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'tg.all_reduce' op runs over mesh axis 'tensor', which the module's mesh (tg.mesh_axes = ["data"]) does not have; use one of its axes}}
    %a = tg.all_reduce sum %x over "tensor" : tensor<8xf32>
    return %a : tensor<8xf32>
  }
}

// -----

func.func @bad_reduction(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, avg, max, min]}}
  %a = tg.all_reduce prod %x over "data" : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

func.func @integer(%x: tensor<8xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{'tg.all_reduce' op operand #0 must be statically shaped tensor with every dimension >= 1}}
  %a = "tg.all_reduce"(%x) {reduction = 0 : i32, axis = "data"} : (tensor<8xi32>) -> tensor<8xi32>
  return %a : tensor<8xi32>
}

// -----

func.func @result_type(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.all_reduce' op requires the same type for all operands and results}}
  %a = "tg.all_reduce"(%x) {reduction = 0 : i32, axis = "data"} : (tensor<8xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
  func.func @scatter_blocks(%x: tensor<6x2xf32>) -> tensor<2x2xf32> {
    // expected-error @+1 {{'tg.reduce_scatter' op over 'data' (2 ranks) needs 'tensor<6x2xf32>' to be that many blocks of 'tensor<2x2xf32>' along dim 0}}
    %a = tg.reduce_scatter sum %x over "data" : tensor<6x2xf32> -> tensor<2x2xf32>
    return %a : tensor<2x2xf32>
  }
}

// -----

module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
  func.func @gather_trailing(%x: tensor<2x2xf32>) -> tensor<4x3xf32> {
    // expected-error @+1 {{'tg.all_gather' op over 'data' (2 ranks) needs 'tensor<4x3xf32>' to be that many blocks of 'tensor<2x2xf32>' along dim 0}}
    %a = tg.all_gather %x over "data" : tensor<2x2xf32> -> tensor<4x3xf32>
    return %a : tensor<4x3xf32>
  }
}

// -----

module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
  func.func @gather_axis(%x: tensor<2xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'tg.all_gather' op runs over mesh axis 'tensor', which the module's mesh}}
    %a = tg.all_gather %x over "tensor" : tensor<2xf32> -> tensor<4xf32>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{'builtin.module' op declares a device mesh with 'tg.mesh_axes' (axis names, e.g. ["data"]) and 'tg.mesh_shape' (their sizes, e.g. array<i64: 4>): 'tg.mesh_shape' is missing or not an array<i64: ...>}}
module attributes {tg.mesh_axes = ["data"]} {
}

// -----

// expected-error @+1 {{'tg.mesh_axes' is missing or not an array of strings}}
module attributes {tg.mesh_shape = array<i64: 2>} {
}

// -----

// expected-error @+1 {{1 axis names but 2 sizes}}
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2, 2>} {
}

// -----

// expected-error @+1 {{axis name 'data' is empty or repeated}}
module attributes {tg.mesh_axes = ["data", "data"], tg.mesh_shape = array<i64: 2, 2>} {
}

// -----

// expected-error @+1 {{axis 'data' has size 0; sizes must be >= 1}}
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 0>} {
}

// -----

// expected-error @+1 {{'func.func' op has 'tg.mesh_axes', which only a builtin.module can declare}}
func.func @on_a_function() attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
  return
}
