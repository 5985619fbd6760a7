// Every tensor of a tg op, and every tensor argument or result with a tg
// attribute, has a static shape with every dimension >= 1: a 0 dimension used
// to end in SIGFPE in MatmulOp::buildVjp, a `?` in an abort in autodiff.
// RUN: tg-opt %s -split-input-file -verify-diagnostics

func.func @zero_dim_operand(%a: tensor<0x8xf32>, %b: tensor<8x4xf32>) -> tensor<0x4xf32> {
  // expected-error @+1 {{'tg.matmul' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<0x8xf32>'}}
  %0 = tg.matmul %a, %b : tensor<0x8xf32>, tensor<8x4xf32> -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}

// -----

func.func @zero_contraction(%a: tensor<4x0xf32>, %b: tensor<0x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'tg.matmul' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions)}}
  %0 = tg.matmul %a, %b : tensor<4x0xf32>, tensor<0x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @dynamic_dim(%a: tensor<?x3xf32>, %b: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'tg.add' op operand #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<?x3xf32>'}}
  %0 = tg.add %a, %b : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @dynamic_index(%table: tensor<8x4xf32>, %ids: tensor<2x?xi32>) -> tensor<2x?x4xf32> {
  // expected-error @+1 {{'tg.embedding' op operand #1 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<2x?xi32>'}}
  %0 = tg.embedding %table[%ids] : tensor<8x4xf32>, tensor<2x?xi32> -> tensor<2x?x4xf32>
  return %0 : tensor<2x?x4xf32>
}

// -----

func.func @zero_dim_result() -> tensor<0xf32> {
  // expected-error @+1 {{'tg.constant' op result #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions)}}
  %0 = tg.constant dense<> : tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

func.func @empty_slice(%i: tensor<10xi64>) -> tensor<0xi64> {
  // expected-error @+1 {{'tg.slice' op result #0 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<0xi64>'}}
  %0 = tg.slice %i [[10]] [[0]] : tensor<10xi64> -> tensor<0xi64>
  return %0 : tensor<0xi64>
}

// -----

// Arguments and results with a tg attribute, even unused by tg ops.

// expected-error @+1 {{'func.func' op argument #1 has type 'tensor<0x4xf32>': a tensor with a tg attribute needs a static shape with every dimension >= 1 (no '?' or 0 dimensions)}}
func.func @zero_dim_param(%x: tensor<2x4xf32> {tg.input = "tokens"}, %w: tensor<0x4xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 has type 'tensor<?x16xi32>': a tensor with a tg attribute needs a static shape with every dimension >= 1 (no '?' or 0 dimensions)}}
func.func @dynamic_input(%t: tensor<?x16xi32> {tg.input = "tokens"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 has type 'tensor<*xf32>': a tensor with a tg attribute needs a static shape with every dimension >= 1 (no '?' or 0 dimensions)}}
func.func @unranked_param(%w: tensor<*xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op result #0 has type 'tensor<?xf32>': a tensor with a tg attribute needs a static shape with every dimension >= 1 (no '?' or 0 dimensions)}}
func.func @dynamic_output(%x: tensor<?xf32>) -> (tensor<?xf32> {tg.output = "y"}) {
  return %x : tensor<?xf32>
}
