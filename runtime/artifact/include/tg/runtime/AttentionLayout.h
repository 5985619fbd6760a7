// The operands of an Attention command (tgx.fbs, table Attention): which is
// which, and which are strided bf16 tensors. Shared by the artifact
// verifier, the CUDA backend and tgc's artifact writer.
#ifndef TG_RUNTIME_ATTENTIONLAYOUT_H
#define TG_RUNTIME_ATTENTIONLAYOUT_H

#include "tgx_generated.h"

#include <algorithm>
#include <cstdint>

namespace tg::runtime {

enum AttentionOperand : unsigned {
  kAttentionQuery,
  kAttentionKey,
  kAttentionValue,
  kAttentionResult,
  kAttentionLogsumexp,
  kAttentionResultGrad,
  kAttentionDelta,
  kAttentionQueryGrad,
  kAttentionKeyGrad,
  kAttentionValueGrad,
};

constexpr unsigned attentionOperandCount(bool gradient) { return gradient ? 10 : 5; }

/// Whether an operand is a bf16 tensor with strides (the others are f32 row
/// statistics [batch, query heads, query length], packed).
constexpr bool isAttentionTensor(unsigned operand) {
  return operand != kAttentionLogsumexp && operand != kAttentionDelta;
}

/// Whether a tensor operand has the queries' heads and rows (else the keys').
constexpr bool isQuerySide(unsigned operand) {
  return operand == kAttentionQuery || operand == kAttentionResult ||
         operand == kAttentionResultGrad || operand == kAttentionQueryGrad;
}

/// The bf16 tensor operands before `operand`: its strides start at 3 times it.
constexpr unsigned attentionTensorIndex(unsigned operand) {
  unsigned index = 0;
  for (unsigned i = 0; i < operand; ++i)
    index += isAttentionTensor(i);
  return index;
}

/// The head dims the kernels are built for.
constexpr bool isAttentionHeadDim(unsigned headDim) { return headDim == 64 || headDim == 128; }

/// The (query, key) pairs of one head that see each other.
inline double attentionVisiblePairs(const tgx::Attention &a) {
  double pairs = 0;
  for (int64_t t = 0; t < int64_t(a.query_len()); ++t) {
    int64_t end = a.causal() ? std::min<int64_t>(t + 1, a.key_len()) : a.key_len();
    int64_t first = a.window() > 0 ? std::max<int64_t>(0, t - a.window() + 1) : 0;
    pairs += double(std::max<int64_t>(0, end - first));
  }
  return pairs;
}

/// The model's FLOPs of the command, as FlashAttention's figures count them:
/// 4 per visible pair and head-dim element forward (q.k and p v), 2.5 times
/// that for the gradient; the kernels' recomputation is not counted.
inline double attentionModelFlops(const tgx::Attention &a) {
  double forward = 4.0 * a.batch() * a.query_heads() * a.head_dim() * attentionVisiblePairs(a);
  return a.pass() == tgx::AttentionPass_Gradient ? 2.5 * forward : forward;
}

} // namespace tg::runtime

#endif
