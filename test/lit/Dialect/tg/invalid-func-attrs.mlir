// Errors of the tg argument and result attributes (TgDialect.cpp).
// RUN: tg-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'func.func' op argument #0: 'tg.param' must be a non-empty string (the parameter's Hugging Face name)}}
func.func @param_empty(%w: tensor<4xf32> {tg.param = ""}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: 'tg.param' must be a non-empty string (the parameter's Hugging Face name)}}
func.func @param_not_string(%x: tensor<4xf32>, %w: tensor<4xf32> {tg.param = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.input' must be a non-empty string}}
func.func @input_empty(%t: tensor<4xi64> {tg.input = ""}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #2: 'tg.input' must be a non-empty string}}
func.func @input_not_string(%a: tensor<4xi64>, %b: tensor<4xi64>, %t: tensor<4xi64> {tg.input = unit}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_unknown_rule(%w: tensor<4xf32> {tg.param = "w", tg.init = "uniform"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_zero_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:0"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_negative_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:-0.02"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_bad_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:abc"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_missing_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_infinite_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:inf"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_nan_std(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:nan"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_trailing_garbage(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:0.02x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_case(%w: tensor<4xf32> {tg.param = "w", tg.init = "Zeros"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be "zeros", "ones" or "normal:STD" with STD > 0}}
func.func @init_not_string(%w: tensor<4xf32> {tg.param = "w", tg.init = 0.02 : f64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown tg argument attribute 'tg.params'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {tg.params = "w"}) {
  return
}

// -----

// tg.output is a result attribute only.
// expected-error @+1 {{'func.func' op unknown tg argument attribute 'tg.output'}}
func.func @output_on_argument(%w: tensor<4xf32> {tg.output = "loss"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.output' must be a non-empty string}}
func.func @output_empty(%x: tensor<f32>) -> (tensor<f32> {tg.output = ""}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #1: 'tg.output' must be a non-empty string}}
func.func @output_not_string(%x: tensor<f32>) -> (tensor<f32>, tensor<f32> {tg.output = ["loss"]}) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// tg.param, tg.init and tg.input are argument attributes only.
// expected-error @+1 {{'func.func' op unknown tg result attribute 'tg.param'}}
func.func @param_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.param = "w"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op unknown tg result attribute 'tg.input'}}
func.func @input_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.input = "tokens"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op unknown tg result attribute 'tg.outputs'}}
func.func @unknown_result_attr(%x: tensor<f32>) -> (tensor<f32> {tg.outputs = "loss"}) {
  return %x : tensor<f32>
}
