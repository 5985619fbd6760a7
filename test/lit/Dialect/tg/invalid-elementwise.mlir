// Verifier and shape-inference errors of the elementwise and reduction ops.
// RUN: tg-opt %s -split-input-file -verify-diagnostics

func.func @add_element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.add' op rhs has element type 'f16', expected 'f32' like lhs}}
  // expected-error @+1 {{'tg.add' op failed to infer returned types}}
  %0 = tg.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sub_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'tg.sub' op operand shapes [2, 3] and [4] do not broadcast: dim 1 is 3 vs 4 (each dim must match or be 1)}}
  // expected-error @+1 {{'tg.sub' op failed to infer returned types}}
  %0 = tg.sub %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Dims align at the end: dim 1 of the rank-3 lhs meets dim 0 of the rhs.
func.func @mul_no_broadcast_aligned(%a: tensor<2x3xf32>, %b: tensor<5x4x3xf32>) -> tensor<5x2x3xf32> {
  // expected-error @+2 {{'tg.mul' op operand shapes [5, 4, 3] and [2, 3] do not broadcast: dim 1 is 4 vs 2 (each dim must match or be 1)}}
  // expected-error @+1 {{'tg.mul' op failed to infer returned types}}
  %0 = tg.mul %b, %a : tensor<5x4x3xf32>, tensor<2x3xf32> -> tensor<5x2x3xf32>
  return %0 : tensor<5x2x3xf32>
}

// -----

func.func @div_element_type(%a: tensor<4xbf16>, %b: tensor<f64>) -> tensor<4xbf16> {
  // expected-error @+2 {{'tg.div' op rhs has element type 'f64', expected 'bf16' like lhs}}
  // expected-error @+1 {{'tg.div' op failed to infer returned types}}
  %0 = tg.div %a, %b : tensor<4xbf16>, tensor<f64> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @max_no_broadcast(%a: tensor<3xf32>, %b: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{'tg.max' op operand shapes [3] and [2] do not broadcast: dim 0 is 3 vs 2 (each dim must match or be 1)}}
  // expected-error @+1 {{'tg.max' op failed to infer returned types}}
  %0 = tg.max %a, %b : tensor<3xf32>, tensor<2xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @min_element_type(%a: tensor<3xf16>, %b: tensor<3xbf16>) -> tensor<3xf16> {
  // expected-error @+2 {{'tg.min' op rhs has element type 'bf16', expected 'f16' like lhs}}
  // expected-error @+1 {{'tg.min' op failed to infer returned types}}
  %0 = tg.min %a, %b : tensor<3xf16>, tensor<3xbf16> -> tensor<3xf16>
  return %0 : tensor<3xf16>
}

// -----

func.func @pow_result_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{'tg.pow' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{'tg.pow' op failed to infer returned types}}
  %0 = tg.pow %a, %b : tensor<2x1xf32>, tensor<3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @add_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = "tg.add"(%a, %a) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @unary_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'tg.exp' op requires the same type for all operands and results}}
  %0 = "tg.exp"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// SameOperandsAndResultType: tg.neg keeps its input's type.
func.func @neg_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'tg.neg' op requires the same type for all operands and results}}
  %0 = "tg.neg"(%x) : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// SameOperandsAndResultType: tg.log keeps its input's type.
func.func @log_type(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.log' op requires the same type for all operands and results}}
  %0 = "tg.log"(%x) : (tensor<4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// SameOperandsAndResultType: tg.tanh keeps its input's type.
func.func @tanh_type(%x: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.tanh' op requires the same type for all operands and results}}
  %0 = "tg.tanh"(%x) : (tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// SameOperandsAndResultType: tg.sqrt keeps its input's type.
func.func @sqrt_type(%x: tensor<2x3xf64>) -> tensor<3x2xf64> {
  // expected-error @+1 {{'tg.sqrt' op requires the same type for all operands and results}}
  %0 = "tg.sqrt"(%x) : (tensor<2x3xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}

// -----

// SameOperandsAndResultType: tg.rsqrt keeps its input's type.
func.func @rsqrt_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'tg.rsqrt' op requires the same type for all operands and results}}
  %0 = "tg.rsqrt"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// SameOperandsAndResultType: tg.cos keeps its input's type.
func.func @cos_type(%x: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.cos' op requires the same type for all operands and results}}
  %0 = "tg.cos"(%x) : (tensor<1x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// SameOperandsAndResultType: tg.sin keeps its input's type.
func.func @sin_type(%x: tensor<4xf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{'tg.sin' op requires the same type for all operands and results}}
  %0 = "tg.sin"(%x) : (tensor<4xf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// SameOperandsAndResultType: tg.silu keeps its input's type.
func.func @silu_type(%x: tensor<2x4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{'tg.silu' op requires the same type for all operands and results}}
  %0 = "tg.silu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

func.func @gelu_bad_approximation(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = tg.gelu %x erf : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gelu_bad_approximation_generic(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{invalid properties {approximate = 2 : i32} for op tg.gelu: Invalid attribute `approximate` in property conversion: 2 : i32}}
  %0 = "tg.gelu"(%x) <{approximate = 2 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gelu_grad_shape(%x: tensor<4xf32>, %g: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.gelu_grad' op requires the same type for all operands and results}}
  %0 = "tg.gelu_grad"(%x, %g) <{approximate = 0 : i32}> : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @silu_grad_type(%x: tensor<4xf32>, %g: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'tg.silu_grad' op requires the same type for all operands and results}}
  %0 = "tg.silu_grad"(%x, %g) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reduce_axis_too_large(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.reduce_sum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'tg.reduce_sum' op failed to infer returned types}}
  %0 = tg.reduce_sum %x [2] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_axis_too_negative(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.reduce_mean' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{'tg.reduce_mean' op failed to infer returned types}}
  %0 = tg.reduce_mean %x [-3] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_scalar(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+2 {{'tg.reduce_max' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'tg.reduce_max' op failed to infer returned types}}
  %0 = tg.reduce_max %x [0] : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @reduce_axis_twice(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.reduce_max' op axis 1 is listed twice}}
  // expected-error @+1 {{'tg.reduce_max' op failed to infer returned types}}
  %0 = tg.reduce_max %x [1, 1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// -1 and 1 are the same axis of a rank-2 input.
func.func @reduce_axis_twice_negative(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.reduce_sum' op axis -1 is listed twice}}
  // expected-error @+1 {{'tg.reduce_sum' op failed to infer returned types}}
  %0 = tg.reduce_sum %x [1, -1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// keep_dims keeps the reduced dim with size 1.
func.func @reduce_keep_dims_shape(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'tg.reduce_mean' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'tg.reduce_mean' op failed to infer returned types}}
  %0 = tg.reduce_mean %x [1] {keep_dims = true} : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_drop_dims_shape(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // expected-error @+2 {{'tg.reduce_sum' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<1x3xf32>'}}
  // expected-error @+1 {{'tg.reduce_sum' op failed to infer returned types}}
  %0 = tg.reduce_sum %x [-2] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
