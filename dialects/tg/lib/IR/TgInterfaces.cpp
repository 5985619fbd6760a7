// The per-op implementations of the tg op interfaces other than the VJPs
// (TgVjp.cpp): FLOP counts of the GEMM-like ops.
#include "tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

/// 2 * (batch * M * N) * K.
int64_t MatmulOp::getFlops() {
  auto lhs = getLhs().getType().getShape();
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * getResult().getType().getNumElements() * k;
}

/// One [T, D] x [D, S] product per query head: 2 * B * Hq * T * S * D.
static int64_t attentionGemmFlops(Value query, Value key) {
  auto q = cast<RankedTensorType>(query.getType()).getShape();
  int64_t s = cast<RankedTensorType>(key.getType()).getShape()[2];
  return 2 * q[0] * q[1] * q[2] * s * q[3];
}

/// Q K^T and P V.
int64_t AttentionOp::getFlops() {
  return 2 * attentionGemmFlops(getQuery(), getKey());
}

/// Recomputed Q K^T, then dV, dP, dQ and dK.
int64_t AttentionGradOp::getFlops() {
  return 5 * attentionGemmFlops(getQuery(), getKey());
}

/// Counted as tg.attention: the model's FLOPs, as MFU counts them, not the
/// fewer the kernel does by skipping masked keys.
int64_t FlashAttentionOp::getFlops() {
  return 2 * attentionGemmFlops(getQuery(), getKey());
}

/// Counted as tg.attention_grad.
int64_t FlashAttentionGradOp::getFlops() {
  return 5 * attentionGemmFlops(getQuery(), getKey());
}
