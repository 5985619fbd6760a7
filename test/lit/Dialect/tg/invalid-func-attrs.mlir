// Errors of the tg argument and result attributes and of the #tg.init and
// #tg.state attributes (TgDialect.cpp).
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

// expected-error @+1 {{'func.func' op argument #2: 'tg.input' must be a non-empty string, got unit}}
func.func @input_not_string(%a: tensor<4xi64>, %b: tensor<4xi64>, %t: tensor<4xi64> {tg.input = unit}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: unknown tg argument attribute 'tg.params'}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {tg.params = "w"}) {
  return
}

// -----

// tg.output is a result attribute only.
// expected-error @+1 {{'func.func' op argument #0: unknown tg argument attribute 'tg.output'}}
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

// tg.param, tg.init, tg.input and tg.state are argument attributes only.
// expected-error @+1 {{'func.func' op result #0: unknown tg result attribute 'tg.param'}}
func.func @param_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.param = "w"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: unknown tg result attribute 'tg.input'}}
func.func @input_on_result(%x: tensor<f32>) -> (tensor<f32> {tg.input = "tokens"}) {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: unknown tg result attribute 'tg.outputs'}}
func.func @unknown_result_attr(%x: tensor<f32>) -> (tensor<f32> {tg.outputs = "loss"}) {
  return %x : tensor<f32>
}

// -----

// #tg.init: the rule (zeros, ones, normal with a finite std > 0).

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be #tg.init<zeros>, #tg.init<ones> or #tg.init<normal, std = S>, got "normal:0.02"}}
func.func @init_string(%w: tensor<4xf32> {tg.param = "w", tg.init = "normal:0.02"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.init' must be #tg.init<zeros>, #tg.init<ones> or #tg.init<normal, std = S>, got 2.000000e-02 : f64}}
func.func @init_not_init_attr(%w: tensor<4xf32> {tg.param = "w", tg.init = 0.02 : f64}) {
  return
}

// -----

// expected-error @+1 {{expected 'zeros', 'ones' or 'normal', got 'uniform'}}
func.func @init_unknown_kind(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<uniform>}) {
  return
}

// -----

// expected-error @+1 {{expected 'zeros', 'ones' or 'normal', got 'Zeros'}}
func.func @init_case(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<Zeros>}) {
  return
}

// -----

// expected-error @+1 {{#tg.init<normal> needs a std: #tg.init<normal, std = S>}}
func.func @init_missing_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal>}) {
  return
}

// -----

// expected-error @+1 {{#tg.init<normal> needs a finite std > 0, got 0.0}}
func.func @init_zero_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{#tg.init<normal> needs a finite std > 0, got -0.02}}
func.func @init_negative_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = -0.02>}) {
  return
}

// -----

// 0x7FF0000000000000 is +inf as an f64 bit pattern.
// expected-error @+1 {{#tg.init<normal> needs a finite std > 0, got inf}}
func.func @init_infinite_std(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<normal, std = 0x7FF0000000000000>}) {
  return
}

// -----

// expected-error @+1 {{#tg.init<ones> takes no std}}
func.func @init_std_on_ones(%w: tensor<4xf32> {tg.param = "w", tg.init = #tg.init<ones, std = 0.02>}) {
  return
}

// -----

// #tg.state and the tg.state / tg.updates attributes.

// expected-error @+1 {{#tg.state<adam_m, ...> needs a non-empty parameter name}}
func.func @state_empty_name(%m: tensor<4xf32> {tg.state = #tg.state<adam_m, "">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.state' must be #tg.state<adam_m, "NAME">, #tg.state<adam_v, "NAME"> or #tg.state<compute, "NAME"> (parameters carry tg.param), got #tg.state<param, "w">}}
func.func @state_param(%w: tensor<4xf32> {tg.state = #tg.state<param, "w">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.state' must be #tg.state<adam_m, "NAME">, #tg.state<adam_v, "NAME"> or #tg.state<compute, "NAME"> (parameters carry tg.param), got "adam_m:w"}}
func.func @state_string(%m: tensor<4xf32> {tg.state = "adam_m:w"}) {
  return
}

// -----

// A compute copy is the 16-bit copy of a parameter argument of its shape.
// expected-error @+1 {{'func.func' op argument #1: the compute copy #tg.state<compute, "v"> needs an argument with tg.param = "v" of its shape, and a bf16 or f16 element type (has 'tensor<4xbf16>')}}
func.func @compute_copy_of_no_parameter(%w: tensor<4xf32> {tg.param = "w"}, %c: tensor<4xbf16> {tg.state = #tg.state<compute, "v">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: the compute copy #tg.state<compute, "w"> needs an argument with tg.param = "w" of its shape, and a bf16 or f16 element type (has 'tensor<4xf32>')}}
func.func @compute_copy_f32(%w: tensor<4xf32> {tg.param = "w"}, %c: tensor<4xf32> {tg.state = #tg.state<compute, "w">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: the compute copy #tg.state<compute, "w"> needs an argument with tg.param = "w" of its shape, and a bf16 or f16 element type (has 'tensor<2x2xf16>')}}
func.func @compute_copy_other_shape(%w: tensor<4xf32> {tg.param = "w"}, %c: tensor<2x2xf16> {tg.state = #tg.state<compute, "w">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.updates' must be a #tg.state<KIND, "NAME">, got "param:w"}}
func.func @updates_string(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = "param:w"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.updates' #tg.state<param, "v"> names no argument of the function (expected one with tg.param = v)}}
func.func @updates_unknown_param(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = #tg.state<param, "v">}) {
  return %w : tensor<4xf32>
}

// -----

// A param named w exists, but no adam_v state for it.
// expected-error @+1 {{'func.func' op result #1: 'tg.updates' #tg.state<adam_v, "w"> names no argument of the function (expected one with tg.state = the same state)}}
func.func @updates_unknown_moment(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">})
    -> (tensor<4xf32> {tg.updates = #tg.state<adam_m, "w">}, tensor<4xf32> {tg.updates = #tg.state<adam_v, "w">}) {
  return %m, %m : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0: 'tg.updates' #tg.state<param, "w"> has type 'tensor<4xf64>' but argument #0 has type 'tensor<4xf32>'}}
func.func @updates_type(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf64> {tg.updates = #tg.state<param, "w">}) {
  %0 = tg.cast %w : tensor<4xf32> -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// Names are unique per function.

// expected-error @+1 {{'func.func' op argument #2: duplicate 'tg.param' "w" (also on argument #0)}}
func.func @duplicate_param(%a: tensor<4xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "v"}, %c: tensor<4xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1: duplicate 'tg.input' "tokens" (also on argument #0)}}
func.func @duplicate_input(%a: tensor<4xi32> {tg.input = "tokens"}, %b: tensor<4xi32> {tg.input = "tokens"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #2: duplicate 'tg.state' #tg.state<adam_m, "w"> (also on argument #1)}}
func.func @duplicate_state(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">}, %m2: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #1: duplicate 'tg.output' "loss" (also on result #0)}}
func.func @duplicate_output(%x: tensor<f32>) -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "loss"}) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op result #1: duplicate 'tg.updates' #tg.state<param, "w"> (also on result #0)}}
func.func @duplicate_updates(%w: tensor<4xf32> {tg.param = "w"}) -> (tensor<4xf32> {tg.updates = #tg.state<param, "w">}, tensor<4xf32> {tg.updates = #tg.state<param, "w">}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// A ZeRO-1 moment (tg.optimizer_shard) is a [chunk] tensor of optimizer
// state, split over an axis of the module's mesh.
module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
// expected-error @+1 {{'func.func' op argument #1: 'tg.optimizer_shard' #tg.optimizer_shard<axis = "data", chunk = 3> needs a 1-D argument of 3 elements, got 'tensor<4xf32>'}}
func.func @optimizer_shard_size(%w: tensor<5xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = #tg.state<adam_m, "w">, tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>}) {
  return
}
}

// -----

module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
// expected-error @+1 {{'func.func' op argument #0: 'tg.optimizer_shard' is only for AdamW moments (arguments with tg.state)}}
func.func @optimizer_shard_param(%w: tensor<3xf32> {tg.param = "w", tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>}) {
  return
}
}

// -----

// expected-error @+1 {{'func.func' op argument #1: 'tg.optimizer_shard' splits over mesh axis 'data', which the module's mesh does not have}}
func.func @optimizer_shard_no_mesh(%w: tensor<5xf32> {tg.param = "w"}, %m: tensor<3xf32> {tg.state = #tg.state<adam_m, "w">, tg.optimizer_shard = #tg.optimizer_shard<axis = "data", chunk = 3>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'tg.optimizer_shard' must be a #tg.optimizer_shard<...>, got "data"}}
func.func @optimizer_shard_not_attr(%m: tensor<3xf32> {tg.state = #tg.state<adam_m, "w">, tg.optimizer_shard = "data"}) {
  return
}
