// Verifier and shape-inference errors of the transformer ops.
// RUN: tg-opt %s -split-input-file -verify-diagnostics

func.func @embedding_table_rank(%t: tensor<100xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.embedding' op table has shape [100], expected [vocab, dim]}}
  // expected-error @+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t[%i] : tensor<100xf32>, tensor<4xi64> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @embedding_result_shape(%t: tensor<100x16xf32>, %i: tensor<2x4xi64>) -> tensor<8x16xf32> {
  // expected-error @+2 {{'tg.embedding' op inferred type(s) 'tensor<2x4x16xf32>' are incompatible with return type(s) of operation 'tensor<8x16xf32>'}}
  // expected-error @+1 {{'tg.embedding' op failed to infer returned types}}
  %0 = tg.embedding %t[%i] : tensor<100x16xf32>, tensor<2x4xi64> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @embedding_float_indices(%t: tensor<100x16xf32>, %i: tensor<4xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'tg.embedding' op operand #1 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = "tg.embedding"(%t, %i) : (tensor<100x16xf32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

func.func @embedding_grad_table_rank(%i: tensor<4xi64>, %g: tensor<4x16xf32>) -> tensor<1600xf32> {
  // expected-error @+1 {{'tg.embedding_grad' op table_grad has shape [1600], expected [vocab, dim]}}
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x16xf32> -> tensor<1600xf32>
  return %0 : tensor<1600xf32>
}

// -----

func.func @embedding_grad_shape(%i: tensor<2x4xi64>, %g: tensor<8x16xf32>) -> tensor<100x16xf32> {
  // expected-error @+1 {{'tg.embedding_grad' op result_grad has shape [8, 16], expected [2, 4, 16] (indices shape + [dim])}}
  %0 = tg.embedding_grad %i, %g : tensor<2x4xi64>, tensor<8x16xf32> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}

// -----

func.func @embedding_grad_dim(%i: tensor<4xi64>, %g: tensor<4x8xf32>) -> tensor<100x16xf32> {
  // expected-error @+1 {{'tg.embedding_grad' op result_grad has shape [4, 8], expected [4, 16] (indices shape + [dim])}}
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x8xf32> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}

// -----

func.func @embedding_grad_element_type(%i: tensor<4xi64>, %g: tensor<4x16xf16>) -> tensor<100x16xf32> {
  // expected-error @+1 {{'tg.embedding_grad' op result_grad has element type 'f16', expected 'f32' like table_grad}}
  %0 = tg.embedding_grad %i, %g : tensor<4xi64>, tensor<4x16xf16> -> tensor<100x16xf32>
  return %0 : tensor<100x16xf32>
}

// -----

func.func @matmul_lhs_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.matmul' op lhs has shape [8], expected rank >= 2 ([batch..., M, K])}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has shape [3, 8, 5], expected rank 2 or rank 4 like lhs}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<3x8x5xf32> -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

func.func @matmul_rhs_vector(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has shape [8], expected rank 2 or rank 2 like lhs}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @matmul_element_type(%a: tensor<4x8xf32>, %b: tensor<8x5xbf16>) -> tensor<4x5xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has element type 'bf16', expected 'f32' like lhs}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x5xbf16> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4x8xf32>, %b: tensor<2x5x8x6xf32>) -> tensor<2x3x4x6xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has batch dims [2, 5], expected [2, 3] like lhs}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<2x5x8x6xf32> -> tensor<2x3x4x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has shape [7, 5], expected contraction size K = 8 in dim 0 (lhs is [4, 8])}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<7x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// With transpose_rhs the contraction dim of rhs is its last.
func.func @matmul_contraction_transpose_rhs(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x8xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has shape [8, 5], expected contraction size K = 8 in dim 1 (lhs is [4, 8])}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b {transpose_rhs = true} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// With transpose_lhs, lhs [K, M] = [4, 8] contracts over 4.
func.func @matmul_contraction_transpose_lhs(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<8x5xf32> {
  // expected-error @+2 {{'tg.matmul' op rhs has shape [8, 5], expected contraction size K = 4 in dim 0 (lhs is [4, 8], transposed)}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b {transpose_lhs = true} : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}

// -----

func.func @matmul_result_shape(%a: tensor<2x4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+2 {{'tg.matmul' op inferred type(s) 'tensor<2x4x5xf32>' are incompatible with return type(s) of operation 'tensor<4x5xf32>'}}
  // expected-error @+1 {{'tg.matmul' op failed to infer returned types}}
  %0 = tg.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+2 {{'tg.layer_norm' op input must have rank >= 1}}
  // expected-error @+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %w {epsilon = 1.0e-5 : f64} : tensor<f32>, tensor<1xf32>, tensor<1xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @layer_norm_weight(%x: tensor<2x16xf32>, %w: tensor<8xf32>, %b: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm' op weight has shape [8], expected [16] (the size of the input's last dim)}}
  // expected-error @+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<8xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_bias(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %b: tensor<1x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm' op bias has shape [1, 16], expected [16] (the size of the input's last dim)}}
  // expected-error @+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<1x16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_bias_element_type(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf16>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm' op bias has element type 'f16', expected 'f32' like input}}
  // expected-error @+1 {{'tg.layer_norm' op failed to infer returned types}}
  %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<16xf16> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_missing_epsilon(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'tg.layer_norm' op requires attribute 'epsilon'}}
  %0 = tg.layer_norm %x, %w, %w : tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_grad_weight(%x: tensor<2x16xf32>, %w: tensor<4x4xf32>, %g: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm_grad' op weight has shape [4, 4], expected [16] (the size of the input's last dim)}}
  // expected-error @+1 {{'tg.layer_norm_grad' op failed to infer returned types}}
  %0:3 = tg.layer_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<4x4xf32>, tensor<2x16xf32> -> tensor<2x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  return %0#0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_grad_result_grad(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %g: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm_grad' op result_grad has type 'tensor<16xf32>', expected 'tensor<2x16xf32>' like input}}
  // expected-error @+1 {{'tg.layer_norm_grad' op failed to infer returned types}}
  %0:3 = tg.layer_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %0#0 : tensor<2x16xf32>
}

// -----

func.func @layer_norm_grad_result_types(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.layer_norm_grad' op inferred type(s) 'tensor<2x16xf32>', 'tensor<16xf32>', 'tensor<16xf32>' are incompatible with return type(s) of operation 'tensor<2x16xf32>', 'tensor<16xf32>', 'tensor<2x16xf32>'}}
  // expected-error @+1 {{'tg.layer_norm_grad' op failed to infer returned types}}
  %0:3 = tg.layer_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf32>
  return %0#0 : tensor<2x16xf32>
}

// -----

func.func @rms_norm_scalar(%x: tensor<bf16>, %w: tensor<1xbf16>) -> tensor<bf16> {
  // expected-error @+2 {{'tg.rms_norm' op input must have rank >= 1}}
  // expected-error @+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<bf16>, tensor<1xbf16> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

func.func @rms_norm_weight(%x: tensor<2x16xf32>, %w: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.rms_norm' op weight has shape [2, 16], expected [16] (the size of the input's last dim)}}
  // expected-error @+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<2x16xf32> -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

func.func @rms_norm_weight_element_type(%x: tensor<2x16xbf16>, %w: tensor<16xf32>) -> tensor<2x16xbf16> {
  // expected-error @+2 {{'tg.rms_norm' op weight has element type 'f32', expected 'bf16' like input}}
  // expected-error @+1 {{'tg.rms_norm' op failed to infer returned types}}
  %0 = tg.rms_norm %x, %w {epsilon = 1.0e-5 : f64} : tensor<2x16xbf16>, tensor<16xf32> -> tensor<2x16xbf16>
  return %0 : tensor<2x16xbf16>
}

// -----

func.func @rms_norm_grad_scalar(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+2 {{'tg.rms_norm_grad' op input must have rank >= 1}}
  // expected-error @+1 {{'tg.rms_norm_grad' op failed to infer returned types}}
  %0:2 = tg.rms_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<f32>, tensor<1xf32>, tensor<f32> -> tensor<f32>, tensor<1xf32>
  return %0#0 : tensor<f32>
}

// -----

func.func @rms_norm_grad_weight(%x: tensor<2x16xf32>, %w: tensor<15xf32>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.rms_norm_grad' op weight has shape [15], expected [16] (the size of the input's last dim)}}
  // expected-error @+1 {{'tg.rms_norm_grad' op failed to infer returned types}}
  %0:2 = tg.rms_norm_grad %x, %w, %x {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<15xf32>, tensor<2x16xf32> -> tensor<2x16xf32>, tensor<15xf32>
  return %0#0 : tensor<2x16xf32>
}

// -----

func.func @rms_norm_grad_result_grad(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %g: tensor<2x16xf16>) -> tensor<2x16xf32> {
  // expected-error @+2 {{'tg.rms_norm_grad' op result_grad has type 'tensor<2x16xf16>', expected 'tensor<2x16xf32>' like input}}
  // expected-error @+1 {{'tg.rms_norm_grad' op failed to infer returned types}}
  %0:2 = tg.rms_norm_grad %x, %w, %g {epsilon = 1.0e-5 : f64} : tensor<2x16xf32>, tensor<16xf32>, tensor<2x16xf16> -> tensor<2x16xf32>, tensor<16xf32>
  return %0#0 : tensor<2x16xf32>
}

// -----

func.func @softmax_type(%x: tensor<2x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tg.softmax' op requires the same type for all operands and results}}
  %0 = "tg.softmax"(%x) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @softmax_grad_type(%y: tensor<2x4xf32>, %g: tensor<2x4xbf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'tg.softmax_grad' op requires the same type for all operands and results}}
  %0 = "tg.softmax_grad"(%y, %g) : (tensor<2x4xf32>, tensor<2x4xbf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @attention_query_rank(%q: tensor<2x8x16xf32>, %k: tensor<2x1x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op query has shape [2, 8, 16], expected [batch, heads, seq, head_dim]}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x8x16xf32>, tensor<2x1x8x16xf32>, tensor<2x1x8x16xf32> -> tensor<2x8x16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

func.func @attention_key_rank(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op key has shape [2, 8, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_key_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<3x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op key has shape [3, 4, 8, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<3x4x8x16xf32>, tensor<3x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_key_head_dim(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x32xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op key has shape [2, 4, 8, 32], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

// Grouped-query attention needs the kv heads to divide the query heads.
func.func @attention_gqa_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op key has shape [2, 3, 8, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

// More kv heads than query heads.
func.func @attention_more_kv_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x8x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op key has shape [2, 8, 8, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x8x8x16xf32>, tensor<2x8x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_zero_kv_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x0x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // 0 kv heads: a 0 dimension, rejected for every tg tensor.
  // expected-error @+1 {{'tg.attention' op operand #1 must be statically shaped tensor with every dimension >= 1 (no '?' or 0 dimensions) of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<2x0x8x16xf32>'}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x0x8x16xf32>, tensor<2x0x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_value_length(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x6x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op value has shape [2, 2, 6, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x6x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_value_element_type(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf16>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op value has element type 'f16', expected 'f32' like query}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf16> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_key_element_type(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xbf16> {
  // expected-error @+2 {{'tg.attention' op key has element type 'f32', expected 'bf16' like query}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xbf16>
  return %0 : tensor<2x4x8x16xbf16>
}

// -----

func.func @attention_missing_scale(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.attention' op requires attribute 'scale'}}
  %0 = tg.attention %q, %q, %q : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_grad_key(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention_grad' op key has shape [2, 3, 8, 16], expected [2, kv_heads, seq, 16] with kv_heads dividing the 4 query heads and key and value of equal length}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %0:3 = tg.attention_grad %q, %k, %k, %q {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>, tensor<2x3x8x16xf32>
  return %0#0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_grad_query(%q: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+2 {{'tg.attention_grad' op query has shape [4, 8, 16], expected [batch, heads, seq, head_dim]}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %0:3 = tg.attention_grad %q, %q, %q, %q {scale = 0.25 : f64} : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>
  return %0#0 : tensor<4x8x16xf32>
}

// -----

func.func @attention_grad_result_grad(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention_grad' op result_grad has type 'tensor<2x2x8x16xf32>', expected 'tensor<2x4x8x16xf32>' like query}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %0:3 = tg.attention_grad %q, %k, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  return %0#0 : tensor<2x4x8x16xf32>
}

// -----

// The key and value gradients have the (GQA) key and value shapes.
func.func @attention_grad_result_types(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention_grad' op inferred type(s) 'tensor<2x4x8x16xf32>', 'tensor<2x2x8x16xf32>', 'tensor<2x2x8x16xf32>' are incompatible with return type(s) of operation 'tensor<2x4x8x16xf32>', 'tensor<2x4x8x16xf32>', 'tensor<2x4x8x16xf32>'}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %0:3 = tg.attention_grad %q, %k, %k, %q {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return %0#0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_rank(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'tg.rope' op input has shape [8, 16], expected [batch, heads, seq, head_dim] with an even head_dim}}
  %0 = tg.rope %x {theta = 10000.0 : f64} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @rope_odd_head_dim(%x: tensor<2x4x8x15xf32>) -> tensor<2x4x8x15xf32> {
  // expected-error @+1 {{'tg.rope' op input has shape [2, 4, 8, 15], expected [batch, heads, seq, head_dim] with an even head_dim}}
  %0 = tg.rope %x {theta = 10000.0 : f64, inverse} : tensor<2x4x8x15xf32>
  return %0 : tensor<2x4x8x15xf32>
}

// -----

func.func @rope_zero_scaling(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op scaling_factor must be positive and finite, got 0}}
  %0 = tg.rope %x {theta = 10000.0 : f64, scaling_factor = 0.0 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_llama3_incomplete(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op the llama3 scaling needs scaling_factor, low_freq_factor, high_freq_factor and original_max_positions}}
  %0 = tg.rope %x {theta = 10000.0 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 1.0 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_llama3_bands(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op high_freq_factor (1.000000e+00) must be above low_freq_factor (4.000000e+00)}}
  %0 = tg.rope %x {theta = 10000.0 : f64, scaling_factor = 8.0 : f64, low_freq_factor = 4.0 : f64, high_freq_factor = 1.0 : f64, original_max_positions = 8192.0 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_zero_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op theta must be positive and finite, got 0}}
  %0 = tg.rope %x {theta = 0.0 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_negative_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op theta must be positive and finite, got -1}}
  %0 = tg.rope %x {theta = -1.0 : f64, inverse} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_nan_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op theta must be positive and finite, got nan}}
  %0 = tg.rope %x {theta = 0x7FF8000000000000 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_inf_theta(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{'tg.rope' op theta must be positive and finite, got INF}}
  %0 = tg.rope %x {theta = 0x7FF0000000000000 : f64} : tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @rope_type(%x: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf16> {
  // expected-error @+1 {{'tg.rope' op requires the same type for all operands and results}}
  %0 = "tg.rope"(%x) <{theta = 10000.0 : f64}> : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf16>
  return %0 : tensor<2x4x8x16xf16>
}

// -----

func.func @cross_entropy_targets(%l: tensor<2x8x32xf32>, %t: tensor<16xi64>) -> tensor<f32> {
  // expected-error @+2 {{'tg.cross_entropy' op targets have shape [16], expected [2, 8] (the logits shape without the vocab dim)}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<16xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_logits_rank(%l: tensor<32xf32>, %t: tensor<i64>) -> tensor<f32> {
  // expected-error @+2 {{'tg.cross_entropy' op logits have shape [32], expected rank >= 2 ([..., vocab])}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %t : tensor<32xf32>, tensor<i64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A scalar logits tensor used to crash the verifier.
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %t: tensor<i64>) -> tensor<f32> {
  // expected-error @+2 {{'tg.cross_entropy' op logits have shape [], expected rank >= 2 ([..., vocab])}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %t : tensor<f32>, tensor<i64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_loss_type(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>) -> tensor<f16> {
  // expected-error @+2 {{'tg.cross_entropy' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error @+1 {{'tg.cross_entropy' op failed to infer returned types}}
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

func.func @cross_entropy_loss_not_scalar(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{'tg.cross_entropy' op result #0 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<1xf32>'}}
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @cross_entropy_grad_targets(%l: tensor<2x8x32xf32>, %t: tensor<8x2xi64>, %g: tensor<f32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'tg.cross_entropy_grad' op targets have shape [8, 2], expected [2, 8] (the logits shape without the vocab dim)}}
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<2x8x32xf32>, tensor<8x2xi64>, tensor<f32>
  return %0 : tensor<2x8x32xf32>
}

// -----

func.func @cross_entropy_grad_logits_rank(%l: tensor<f32>, %t: tensor<i64>, %g: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'tg.cross_entropy_grad' op logits have shape [], expected rank >= 2 ([..., vocab])}}
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<f32>, tensor<i64>, tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_grad_loss_grad_type(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>, %g: tensor<f16>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'tg.cross_entropy_grad' op loss_grad has element type 'f16', expected 'f32' like logits}}
  %0 = tg.cross_entropy_grad %l, %t, %g : tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f16>
  return %0 : tensor<2x8x32xf32>
}

// -----

func.func @cross_entropy_grad_result_type(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi64>, %g: tensor<f32>) -> tensor<2x8x32xf16> {
  // expected-error @+1 {{'tg.cross_entropy_grad' op failed to verify that all of {logits, logits_grad} have same type}}
  %0 = "tg.cross_entropy_grad"(%l, %t, %g) : (tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<f32>) -> tensor<2x8x32xf16>
  return %0 : tensor<2x8x32xf16>
}

// -----

// A sliding window only narrows causal attention.
func.func @attention_window_not_causal(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention' op window is 4, expected 0 (none) or a positive window on causal attention}}
  // expected-error @+1 {{'tg.attention' op failed to infer returned types}}
  %0 = tg.attention %q, %q, %q {scale = 0.25 : f64, causal = false, window = 4 : i64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %0 : tensor<2x4x8x16xf32>
}

// -----

func.func @attention_grad_negative_window(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+2 {{'tg.attention_grad' op window is -1, expected 0 (none) or a positive window on causal attention}}
  // expected-error @+1 {{'tg.attention_grad' op failed to infer returned types}}
  %0:3 = tg.attention_grad %q, %q, %q, %q {scale = 0.25 : f64, window = -1 : i64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return %0#0 : tensor<2x4x8x16xf32>
}

// -----

func.func @flash_attention_lse_type(%q: tensor<1x2x4x8xf32>, %l: tensor<1x2x4xf64>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention_grad' op logsumexp has type 'tensor<1x2x4xf64>', expected 'tensor<1x2x4xf32>' (flash_attention's second result)}}
  // expected-error @+1 {{'tg.flash_attention_grad' op failed to infer returned types}}
  %0:3 = tg.flash_attention_grad %q, %q, %q, %q, %l, %q {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf64>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0#0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_result_shape(%q: tensor<1x2x4x8xf32>, %o: tensor<1x2x4x4xf32>, %l: tensor<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention_grad' op result has type 'tensor<1x2x4x4xf32>', expected 'tensor<1x2x4x8xf32>' like query}}
  // expected-error @+1 {{'tg.flash_attention_grad' op failed to infer returned types}}
  %0:3 = tg.flash_attention_grad %q, %q, %q, %o, %l, %q {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0#0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_rope_scaling_without_theta(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention' op rope scalings without rope_theta}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %0, %1 = tg.flash_attention %q, %q, %q {rope_scaling_factor = 2.0 : f64, scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_rope_llama3_incomplete(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention' op rope: the llama3 scaling needs scaling_factor, low_freq_factor, high_freq_factor and original_max_positions}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %0, %1 = tg.flash_attention %q, %q, %q {rope_low_freq_factor = 1.0 : f64, rope_theta = 1.0e4 : f64, scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_grad_rope_theta(%q: tensor<1x2x4x8xf32>, %l: tensor<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention_grad' op rope: theta must be positive and finite, got -1}}
  // expected-error @+1 {{'tg.flash_attention_grad' op failed to infer returned types}}
  %0:3 = tg.flash_attention_grad %q, %q, %q, %q, %l, %q {rope_theta = -1.0 : f64, scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0#0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_rope_odd_head_dim(%q: tensor<1x2x4x7xf32>) -> tensor<1x2x4x7xf32> {
  // expected-error @+2 {{'tg.flash_attention' op rope over an odd head dim 7 (it rotates pairs (i, i + D/2))}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %0, %1 = tg.flash_attention %q, %q, %q {rope_theta = 1.0e4 : f64, scale = 0.5 : f64} : tensor<1x2x4x7xf32>, tensor<1x2x4x7xf32>, tensor<1x2x4x7xf32> -> tensor<1x2x4x7xf32>, tensor<1x2x4xf32>
  return %0 : tensor<1x2x4x7xf32>
}

// -----

// cuDNN's fused attention (cudnn) has no rotation.
func.func @flash_attention_cudnn_rope(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention' op cudnn with rope_theta: cuDNN's graph cannot rotate the queries and keys (drop cudnn, or apply tg.rope before the op)}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %0, %1 = tg.flash_attention %q, %q, %q {cudnn, rope_theta = 1.0e4 : f64, scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_window_not_causal(%q: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention' op window is 2, expected 0 (none) or a positive window on causal attention}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %0, %1 = tg.flash_attention %q, %q, %q {causal = false, scale = 0.5 : f64, window = 2 : i64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_result_tokens_shape(%q: tensor<1x2x4x8xf32>, %l: tensor<1x2x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{'tg.flash_attention_grad' op result has type 'tensor<1x2x4x8xf32>', expected 'tensor<1x4x2x8xf32>' (query transposed to [batch, seq, heads, head_dim]: result_tokens)}}
  // expected-error @+1 {{'tg.flash_attention_grad' op failed to infer returned types}}
  %0:3 = tg.flash_attention_grad %q, %q, %q, %q, %l, %q {result_tokens, scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
  return %0#0 : tensor<1x2x4x8xf32>
}

// -----

func.func @flash_attention_head_dim(%q: tensor<1x1x4x1024xf32>) -> tensor<1x1x4x1024xf32> {
  // expected-error @+2 {{'tg.flash_attention' op head dim 1024 is above the flash kernels' 512 (a task holds 16 x D elements on the stack); use tg.attention, which is decomposed}}
  // expected-error @+1 {{'tg.flash_attention' op failed to infer returned types}}
  %o, %l = tg.flash_attention %q, %q, %q {scale = 0.03125 : f64} : tensor<1x1x4x1024xf32>, tensor<1x1x4x1024xf32>, tensor<1x1x4x1024xf32> -> tensor<1x1x4x1024xf32>, tensor<1x1x4xf32>
  return %o : tensor<1x1x4x1024xf32>
}
