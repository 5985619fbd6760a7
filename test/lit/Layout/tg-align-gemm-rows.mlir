// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-align-gemm-rows))' --mlir-use-nameloc-as-prefix | FileCheck %s
// RUN: tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-align-gemm-rows{remarks=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: not tg-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(tg-align-gemm-rows{row-bytes=24}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tg-align-gemm-rows: row-bytes 24 is not a positive multiple of 16

// GPT-2's logits and their gradients with a vocabulary of 67 bf16 elements
// (134-byte rows): the tied embedding is padded to 128 rows once and read by
// both products that take it; the logits' gradient is padded once, and the
// [B x T, V] view of it is a reshape of the padded [B, T, V'] tensor (the
// unpadded view, now unread, goes). The logits and the embedding's gradient
// are sliced back.
// CHECK-LABEL: func.func @logits_and_gradients(
// CHECK-DAG: %[[WTE:wte_aligned.*]] = tg.pad %wte low [0, 0] high [61, 0] : tensor<67x64xbf16> -> tensor<128x64xbf16>
// CHECK-DAG: %[[DLOGITS:dlogits_aligned.*]] = tg.pad %dlogits low [0, 0, 0] high [0, 0, 61] : tensor<8x32x67xbf16> -> tensor<8x32x128xbf16>
// CHECK-DAG: %[[DFLAT:.*]] = tg.reshape %[[DLOGITS]] : tensor<8x32x128xbf16> -> tensor<256x128xbf16>
// CHECK: %[[LOGITS:.*]] = tg.matmul %h, %[[WTE]] {transpose_rhs = true} : tensor<8x32x64xbf16>, tensor<128x64xbf16> -> tensor<8x32x128xbf16>
// CHECK: tg.slice %[[LOGITS]]{{\[}}[0, 0, 0]] {{\[}}[8, 32, 67]] : tensor<8x32x128xbf16> -> tensor<8x32x67xbf16>
// CHECK: tg.matmul %[[DLOGITS]], %[[WTE]] : tensor<8x32x128xbf16>, tensor<128x64xbf16> -> tensor<8x32x64xbf16>
// CHECK-NOT: tg.reshape %dlogits :
// CHECK: %[[DWTE:.*]] = tg.matmul %[[DFLAT]], %hflat {transpose_lhs = true} : tensor<256x128xbf16>, tensor<256x64xbf16> -> tensor<128x64xbf16>
// CHECK: tg.slice %[[DWTE]]{{\[}}[0, 0]] {{\[}}[67, 64]] : tensor<128x64xbf16> -> tensor<67x64xbf16>
// CHECK-NOT: tg.pad
// REMARK: remark: stored rows not 16-byte aligned (2-byte elements): M x K x N 32 x 64 x 67 padded with zeros to 32 x 64 x 128, the product sliced back
// REMARK: remark: stored rows not 16-byte aligned (2-byte elements): M x K x N 32 x 67 x 64 padded with zeros to 32 x 128 x 64
// REMARK-NOT: sliced back
// REMARK: remark: stored rows not 16-byte aligned (2-byte elements): M x K x N 67 x 256 x 64 padded with zeros to 128 x 256 x 64, the product sliced back
func.func @logits_and_gradients(%h: tensor<8x32x64xbf16> loc("h"), %wte: tensor<67x64xbf16> loc("wte"),
                                %dlogits: tensor<8x32x67xbf16> loc("dlogits"), %hflat: tensor<256x64xbf16> loc("hflat"))
    -> (tensor<8x32x67xbf16>, tensor<8x32x64xbf16>, tensor<67x64xbf16>) {
  %logits = tg.matmul %h, %wte {transpose_rhs = true} : tensor<8x32x64xbf16>, tensor<67x64xbf16> -> tensor<8x32x67xbf16>
  %dh = tg.matmul %dlogits, %wte : tensor<8x32x67xbf16>, tensor<67x64xbf16> -> tensor<8x32x64xbf16>
  %dflat = tg.reshape %dlogits : tensor<8x32x67xbf16> -> tensor<256x67xbf16>
  %dwte = tg.matmul %dflat, %hflat {transpose_lhs = true} : tensor<256x67xbf16>, tensor<256x64xbf16> -> tensor<67x64xbf16>
  return %logits, %dh, %dwte : tensor<8x32x67xbf16>, tensor<8x32x64xbf16>, tensor<67x64xbf16>
}

// -----

// Aligned rows stay as they are: 8 bf16 elements are 16 bytes, and a
// dimension that is no stored row's length (M here, of a product whose lhs
// is not transposed) may be anything.
// CHECK-LABEL: func.func @aligned(
// CHECK-NOT: tg.pad
// CHECK-NOT: tg.slice
// REMARK-NOT: remark
func.func @aligned(%a: tensor<67x8xbf16>, %b: tensor<8x24xbf16>) -> tensor<67x24xbf16> {
  %0 = tg.matmul %a, %b : tensor<67x8xbf16>, tensor<8x24xbf16> -> tensor<67x24xbf16>
  return %0 : tensor<67x24xbf16>
}

// -----

// f32 rows of 5 elements (20 bytes): the transposed rhs's rows are K long,
// so K is padded in both operands (to 32 elements, 128 bytes); the product's
// rows (N = 4, 16 bytes) are aligned, so nothing is sliced. The batched lhs
// keeps its batch.
// CHECK-LABEL: func.func @contraction_f32(
// CHECK-DAG: %[[A:.*]] = tg.pad %a low [0, 0, 0] high [0, 0, 27] : tensor<2x3x5xf32> -> tensor<2x3x32xf32>
// CHECK-DAG: %[[B:.*]] = tg.pad %b low [0, 0] high [0, 27] : tensor<4x5xf32> -> tensor<4x32xf32>
// CHECK: %[[C:.*]] = tg.matmul %[[A]], %[[B]] {transpose_rhs = true} : tensor<2x3x32xf32>, tensor<4x32xf32> -> tensor<2x3x4xf32>
// CHECK-NOT: tg.slice
// CHECK: return %[[C]]
// REMARK: remark: stored rows not 16-byte aligned (4-byte elements): M x K x N 3 x 5 x 4 padded with zeros to 3 x 32 x 4{{$}}
func.func @contraction_f32(%a: tensor<2x3x5xf32> loc("a"), %b: tensor<4x5xf32> loc("b")) -> tensor<2x3x4xf32> {
  %0 = tg.matmul %a, %b {transpose_rhs = true} : tensor<2x3x5xf32>, tensor<4x5xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
