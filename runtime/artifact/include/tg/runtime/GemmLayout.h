// Where a Gemm command's operands lie in their buffers (tgx.fbs, table Gemm):
// the one reading of its strides, leading dimensions and two-level batch
// that the artifact verifier and every backend share.
#ifndef TG_RUNTIME_GEMMLAYOUT_H
#define TG_RUNTIME_GEMMLAYOUT_H

#include "tgx_generated.h"

#include <cstdint>

namespace tg::runtime {

/// A stored matrix of a Gemm: `rows` x `cols`, rows `ld` elements apart;
/// product i's starts at (i / innerBatch) * stride + (i % innerBatch) *
/// innerStride.
struct GemmOperand {
  int64_t rows, cols, ld, stride, innerStride;
};

/// The inner batch count (1 where the batch is one level).
inline int64_t gemmInnerBatch(const tgx::Gemm &g) {
  return g.inner_batch() > 1 ? g.inner_batch() : 1;
}

/// Operand 0 (a), 1 (b) or 2 (c) as stored: op(a) is m x k, so a transposed
/// a is stored k x m; likewise b.
inline GemmOperand gemmOperand(const tgx::Gemm &g, int operand) {
  GemmOperand o;
  if (operand == 0)
    o = g.transpose_a() ? GemmOperand{g.k(), g.m(), g.lda(), g.stride_a(), g.inner_stride_a()}
                        : GemmOperand{g.m(), g.k(), g.lda(), g.stride_a(), g.inner_stride_a()};
  else if (operand == 1)
    o = g.transpose_b() ? GemmOperand{g.n(), g.k(), g.ldb(), g.stride_b(), g.inner_stride_b()}
                        : GemmOperand{g.k(), g.n(), g.ldb(), g.stride_b(), g.inner_stride_b()};
  else
    o = GemmOperand{g.m(), g.n(), g.ldc(), g.stride_c(), g.inner_stride_c()};
  if (o.ld == 0)
    o.ld = o.cols;
  return o;
}

/// Where a Gemm command's operands after [a, b, c] are in its list, -1
/// where absent: the bias (Bias, BiasAddend) or its gradient (BiasGrad),
/// the addend (Addend, BiasAddend), GELU's aux (an activation); `count` in
/// all.
struct GemmExtraOperands {
  int vector = -1, addend = -1, aux = -1, count = 3;
};

inline GemmExtraOperands gemmExtraOperands(const tgx::Gemm &g) {
  GemmExtraOperands o;
  tgx::GemmEpilogue e = g.epilogue();
  if (e == tgx::GemmEpilogue_Bias || e == tgx::GemmEpilogue_BiasGrad ||
      e == tgx::GemmEpilogue_BiasAddend)
    o.vector = o.count++;
  if (e == tgx::GemmEpilogue_Addend || e == tgx::GemmEpilogue_BiasAddend)
    o.addend = o.count++;
  if (g.activation() != tgx::GemmActivation_None)
    o.aux = o.count++;
  return o;
}

/// Elements from the start of product i's matrix of `o`.
inline int64_t gemmOffset(const tgx::Gemm &g, const GemmOperand &o, int64_t i) {
  int64_t inner = gemmInnerBatch(g);
  return (i / inner) * o.stride + (i % inner) * o.innerStride;
}

} // namespace tg::runtime

#endif
