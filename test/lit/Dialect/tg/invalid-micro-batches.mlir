// Errors of tg.micro_batches (TgMicroBatches.cpp and ODS).
// RUN: tg-opt %s -split-input-file -verify-diagnostics

func.func @count_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'count' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
  %r = tg.micro_batches 0 sliced(%x : tensor<4xf32>) {
  ^bb0(%xs: tensor<4xf32>):
    tg.yield %xs : tensor<4xf32>
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @not_divisible(%x: tensor<5x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'tg.micro_batches' op sliced operand #0 of type 'tensor<5x2xf32>': dim 0 must be divisible by the count 2}}
  %r = tg.micro_batches 2 sliced(%x : tensor<5x2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    tg.yield %xs : tensor<2x2xf32>
  } -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

func.func @scalar_sliced(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tg.micro_batches' op sliced operand #0 of type 'tensor<f32>': dim 0 must be divisible by the count 1}}
  %r = tg.micro_batches 1 sliced(%x : tensor<f32>) {
  ^bb0(%xs: tensor<f32>):
    tg.yield %xs : tensor<f32>
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @slice_type(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tg.micro_batches' op body argument #0 has type 'tensor<4x2xf32>', expected 'tensor<2x2xf32>' (one micro-batch of sliced operand #0)}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) {
  ^bb0(%xs: tensor<4x2xf32>):
    tg.yield %xs : tensor<4x2xf32>
  } -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

func.func @shared_type(%x: tensor<4x2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tg.micro_batches' op body argument #1 has type 'tensor<2xf64>', expected 'tensor<2xf32>' (the shared operand)}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) shared(%w : tensor<2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>, %ws: tensor<2xf64>):
    %c = tg.cast %ws : tensor<2xf64> -> tensor<2xf32>
    tg.yield %c : tensor<2xf32>
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @arg_count(%x: tensor<4x2xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tg.micro_batches' op body takes 1 arguments, expected 1 sliced + 1 shared}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) shared(%w : tensor<2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    %s = tg.reduce_sum %xs [0] : tensor<2x2xf32> -> tensor<2xf32>
    tg.yield %s : tensor<2xf32>
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @yield_types(%x: tensor<4x2xf32>) -> tensor<2x2xf64> {
  // expected-error @+1 {{'tg.micro_batches' op yields 'tensor<2x2xf32>' but the results are 'tensor<2x2xf64>'}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4x2xf32>) {
  ^bb0(%xs: tensor<2x2xf32>):
    tg.yield %xs : tensor<2x2xf32>
  } -> tensor<2x2xf64>
  return %r : tensor<2x2xf64>
}

// -----

func.func @int_result(%x: tensor<4xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'tg.micro_batches' op result #0 must be variadic of statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2xi32>'}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4xi32>) {
  ^bb0(%xs: tensor<2xi32>):
    tg.yield %xs : tensor<2xi32>
  } -> tensor<2xi32>
  return %r : tensor<2xi32>
}

// -----

func.func @not_isolated(%x: tensor<4xf32>, %w: tensor<2xf32>) -> tensor<2xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = tg.micro_batches 2 sliced(%x : tensor<4xf32>) {
  ^bb0(%xs: tensor<2xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %y = tg.add %xs, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
    tg.yield %y : tensor<2xf32>
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

func.func @yield_outside(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'tg.yield' op expects parent op 'tg.micro_batches'}}
  tg.yield %x : tensor<2xf32>
}
