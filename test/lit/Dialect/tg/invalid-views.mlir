// Verifier and shape-inference errors of the constant, cast and view ops.
// Every message names the operand at fault and the shape that was expected.
// RUN: tg-opt %s -split-input-file -verify-diagnostics

func.func @reshape_element_count(%x: tensor<2x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.reshape' op result shape [4] has 4 elements, expected 6 like the input [2, 3]}}
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'tg.reshape' op result element type 'f16' differs from the input's 'f32'; use tg.cast}}
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'tg.transpose' op permutation [1, 0] is not a permutation of the input's 3 dims}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_repeated_dim(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{'tg.transpose' op permutation [0, 0] is not a permutation of the input's 2 dims}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @transpose_out_of_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'tg.transpose' op permutation [-1, 0] is not a permutation of the input's 2 dims}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x [-1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'tg.transpose' op failed to infer returned types}}
  %0 = tg.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_incompatible(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'tg.broadcast' op operand shapes [3] and [2, 4] do not broadcast: dim 1 is 3 vs 4 (each dim must match or be 1)}}
  %0 = tg.broadcast %x : tensor<3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_shrinks(%x: tensor<4x1xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'tg.broadcast' op input [4, 1] does not broadcast to the result shape [3]}}
  %0 = tg.broadcast %x : tensor<4x1xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @broadcast_element_type(%x: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'tg.broadcast' op result element type 'f16' differs from the input's 'f32'}}
  %0 = tg.broadcast %x : tensor<4xf32> -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

func.func @slice_entry_count(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.slice' op offsets and sizes need one entry per input dim (2), got 1 and 2}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[1]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_size_count(%x: tensor<4x6xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.slice' op offsets and sizes need one entry per input dim (2), got 2 and 1}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[1, 0]] [[2]] : tensor<4x6xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @slice_out_of_bounds(%x: tensor<4x6xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{'tg.slice' op dim 1: offset 3 + size 4 exceeds the input size 6}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[0, 3]] [[2, 4]] : tensor<4x6xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @slice_size_too_large(%x: tensor<4x6xf32>) -> tensor<5x6xf32> {
  // expected-error @+2 {{'tg.slice' op dim 0: offset 0 + size 5 exceeds the input size 4}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[0, 0]] [[5, 6]] : tensor<4x6xf32> -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}

// -----

// offset + size overflows int64: still out of bounds.
func.func @slice_offset_overflow(%x: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{'tg.slice' op dim 0: offset 9223372036854775807 + size 1 exceeds the input size 4}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[9223372036854775807]] [[1]] : tensor<4xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @slice_negative_offset(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.slice' op dim 0: offset -1 and size 2 must be non-negative}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[-1, 0]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_negative_size(%x: tensor<4x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.slice' op dim 1: offset 0 and size -3 must be non-negative}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = "tg.slice"(%x) <{offsets = array<i64: 0, 0>, sizes = array<i64: 2, -3>}> : (tensor<4x6xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_result_shape(%x: tensor<4x6xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{'tg.slice' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x2xf32>'}}
  // expected-error @+1 {{'tg.slice' op failed to infer returned types}}
  %0 = tg.slice %x [[0, 0]] [[2, 3]] : tensor<4x6xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @pad_entry_count(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{'tg.pad' op low and high need one entry per input dim (2), got 1 and 2}}
  // expected-error @+1 {{'tg.pad' op failed to infer returned types}}
  %0 = tg.pad %x low [1] high [0, 0] : tensor<2x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @pad_high_count(%x: tensor<2x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+2 {{'tg.pad' op low and high need one entry per input dim (2), got 2 and 3}}
  // expected-error @+1 {{'tg.pad' op failed to infer returned types}}
  %0 = tg.pad %x low [1, 0] high [0, 0, 0] : tensor<2x3xf32> -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{'tg.pad' op dim 1: low 0 and high -1 padding must be non-negative}}
  // expected-error @+1 {{'tg.pad' op failed to infer returned types}}
  %0 = tg.pad %x low [0, 0] high [0, -1] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @pad_negative_low(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+2 {{'tg.pad' op dim 0: low -1 and high 0 padding must be non-negative}}
  // expected-error @+1 {{'tg.pad' op failed to infer returned types}}
  %0 = tg.pad %x low [-1, 0] high [0, 0] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

func.func @pad_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.pad' op inferred type(s) 'tensor<3x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'tg.pad' op failed to infer returned types}}
  %0 = tg.pad %x low [1, 0] high [0, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @pad_integer(%x: tensor<2x3xi64>) -> tensor<3x3xi64> {
  // expected-error @+1 {{'tg.pad' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = tg.pad %x low [1, 0] high [0, 0] : tensor<2x3xi64> -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}

// -----

func.func @concat_no_inputs() -> tensor<2xf32> {
  // expected-error @+2 {{'tg.concat' op needs at least one input}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_axis_too_large(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{'tg.concat' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_axis_too_negative(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{'tg.concat' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_scalar(%a: tensor<f32>) -> tensor<f32> {
  // expected-error @+2 {{'tg.concat' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a {axis = 0 : i64} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+2 {{'tg.concat' op input #1 has shape [4, 5], expected [2, 5] (all dims but the axis must match input #0)}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @concat_third_input(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<6x3xf32> {
  // expected-error @+2 {{'tg.concat' op input #2 has shape [2, 3, 1], expected [0, 3] (all dims but the axis must match input #0)}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<6x3xf32>
  return %0 : tensor<6x3xf32>
}

// -----

func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+2 {{'tg.concat' op input #1 has element type 'f16', expected 'f32' like input #0}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_result_shape(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.concat' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  // expected-error @+1 {{'tg.concat' op failed to infer returned types}}
  %0 = tg.concat %a, %a {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @constant_type_mismatch() -> tensor<2xf32> {
  // expected-error @+1 {{'tg.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "tg.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @constant_bool() -> tensor<2xi1> {
  // expected-error @+1 {{'tg.constant' op result #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of}}
  %0 = tg.constant dense<true> : tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'tg.cast' op requires the same shape for all operands and results}}
  %0 = tg.cast %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

// The generic form reaches the ODS type constraints: only ranked tensors.
func.func @unranked(%x: tensor<*xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'tg.reshape' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of}}
  %0 = "tg.reshape"(%x) : (tensor<*xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
