// The operands of an Attention command (tgx.fbs, table Attention): which is
// which, and which are strided bf16 tensors. Shared by the artifact
// verifier, the CUDA backend and tgc's artifact writer (and the order of
// exec.attention's inputs, then outputs).
#ifndef TG_RUNTIME_ATTENTIONLAYOUT_H
#define TG_RUNTIME_ATTENTIONLAYOUT_H

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

} // namespace tg::runtime

#endif
