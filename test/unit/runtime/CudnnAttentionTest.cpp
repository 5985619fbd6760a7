// cuDNN's fused-attention graphs as the CUDA backend builds them, checked up
// to their finalized operations: cuDNN validates each tensor and operation
// (types, shapes, strides, which tensors an operation may take) without a
// GPU. Whether an engine takes the whole graph needs a GPU
// (scripts/gpu-validate). Skipped where libcudnn.so.9 cannot be loaded.
#include "CudnnAttention.h"

#include "tg/runtime/AttentionLayout.h"

#include <gtest/gtest.h>

namespace {

using tg::runtime::cuda::AttentionProblem;
using tg::runtime::cuda::CudnnAttention;

/// q, k, v and the result read from a fused [B, T, 3, H, D] projection and
/// a [B, T, H, D] buffer (GPT-2's layouts around the flash kernels), the
/// gradients written alike.
AttentionProblem gpt2Problem(bool gradient, bool causal) {
  AttentionProblem p;
  p.gradient = gradient;
  p.batch = 2;
  p.queryHeads = p.keyHeads = 4;
  p.queryLen = p.keyLen = 128;
  p.headDim = 64;
  p.causal = causal;
  p.scale = 0.125f;
  const int64_t fused[] = {128 * 3 * 4 * 64, 64, 3 * 4 * 64};
  const int64_t tokens[] = {128 * 4 * 64, 64, 4 * 64};
  for (unsigned i = 0; i < tg::runtime::attentionOperandCount(gradient); ++i) {
    if (!tg::runtime::isAttentionTensor(i))
      continue;
    const bool projection = i == tg::runtime::kAttentionQuery || i == tg::runtime::kAttentionKey ||
                            i == tg::runtime::kAttentionValue ||
                            i >= tg::runtime::kAttentionQueryGrad;
    for (int64_t s : projection ? fused : tokens)
      p.strides.push_back(s);
  }
  return p;
}

/// Llama's grouped heads, [B, H, T, D] packed: 8 query heads on 2 key heads.
AttentionProblem groupedProblem(bool gradient) {
  AttentionProblem p;
  p.gradient = gradient;
  p.batch = 1;
  p.queryHeads = 8;
  p.keyHeads = 2;
  p.queryLen = p.keyLen = 256;
  p.headDim = 128;
  p.causal = true;
  p.scale = 0.0883883f;
  for (unsigned i = 0; i < tg::runtime::attentionOperandCount(gradient); ++i) {
    if (!tg::runtime::isAttentionTensor(i))
      continue;
    const int64_t heads = tg::runtime::isQuerySide(i) ? p.queryHeads : p.keyHeads;
    for (int64_t s : {heads * 256 * 128, int64_t(256 * 128), int64_t(128)})
      p.strides.push_back(s);
  }
  return p;
}

/// describe(), skipping the test where cuDNN is not installed.
#define EXPECT_DESCRIBED(problem)                                                                  \
  do {                                                                                             \
    std::string error;                                                                             \
    bool described = CudnnAttention::describe(problem, error);                                     \
    if (!described && error.find("cannot be loaded") != std::string::npos)                         \
      GTEST_SKIP() << error;                                                                       \
    EXPECT_TRUE(described) << error;                                                               \
  } while (false)

TEST(CudnnAttentionGraph, ForwardCausalInFusedLayouts) {
  EXPECT_DESCRIBED(gpt2Problem(false, true));
}
TEST(CudnnAttentionGraph, ForwardFull) { EXPECT_DESCRIBED(gpt2Problem(false, false)); }
TEST(CudnnAttentionGraph, GradientCausalInFusedLayouts) {
  EXPECT_DESCRIBED(gpt2Problem(true, true));
}
TEST(CudnnAttentionGraph, GradientFull) { EXPECT_DESCRIBED(gpt2Problem(true, false)); }
TEST(CudnnAttentionGraph, ForwardGroupedHeads) { EXPECT_DESCRIBED(groupedProblem(false)); }
TEST(CudnnAttentionGraph, GradientGroupedHeads) { EXPECT_DESCRIBED(groupedProblem(true)); }

/// Mistral's sliding window: query t sees keys t - 47 to t.
AttentionProblem windowProblem(bool gradient) {
  AttentionProblem p = groupedProblem(gradient);
  p.window = 48;
  return p;
}
TEST(CudnnAttentionGraph, ForwardSlidingWindow) { EXPECT_DESCRIBED(windowProblem(false)); }
TEST(CudnnAttentionGraph, GradientSlidingWindow) { EXPECT_DESCRIBED(windowProblem(true)); }

// What cuDNN's frontend refuses or works around, refused by version (no
// cuDNN needed): the command then runs on the runtime's kernels.
TEST(CudnnAttentionGraph, RefusalsByVersion) {
  const size_t recent = 91900;
  EXPECT_EQ(CudnnAttention::refusal(gpt2Problem(true, true), recent), "");
  EXPECT_EQ(CudnnAttention::refusal(windowProblem(true), recent), "");
  EXPECT_NE(CudnnAttention::refusal(gpt2Problem(false, true), 91001).find("known bugs"),
            std::string::npos);
  AttentionProblem window = windowProblem(false);
  EXPECT_NE(CudnnAttention::refusal(window, 90100).find("cuDNN 9.1.0 has no sliding window"),
            std::string::npos);
  window.causal = false;
  EXPECT_NE(CudnnAttention::refusal(window, recent).find("without the causal mask"),
            std::string::npos);
  window = windowProblem(false);
  window.queryLen = 512;
  EXPECT_NE(CudnnAttention::refusal(window, recent).find("no more queries than keys"),
            std::string::npos);
  // The gradient's keys must fill tiles of 128 up to 9.15.0.
  AttentionProblem ragged = gpt2Problem(true, true);
  ragged.keyLen = ragged.queryLen = 100;
  EXPECT_NE(CudnnAttention::refusal(ragged, 91500).find("100 keys (not a multiple of 128)"),
            std::string::npos);
  EXPECT_EQ(CudnnAttention::refusal(ragged, 91501), "");
  EXPECT_EQ(CudnnAttention::refusal(gpt2Problem(false, true), 91500), "");
}

// The check can fail: cuDNN refuses a tensor at a negative stride, and the
// error names it. (Without a GPU cuDNN checks each tensor and the types of
// the operations' attributes; how the operations' shapes meet is checked
// when the whole graph is finalized, on a GPU.)
TEST(CudnnAttentionGraph, NegativeStrideIsRefusedByName) {
  AttentionProblem p = groupedProblem(true);
  std::string error;
  if (!CudnnAttention::describe(p, error) && error.find("cannot be loaded") != std::string::npos)
    GTEST_SKIP() << error;
  p.strides[3 * tg::runtime::attentionTensorIndex(tg::runtime::kAttentionKey) + 2] = -128;
  EXPECT_FALSE(CudnnAttention::describe(p, error));
  EXPECT_NE(error.find("cuDNN rejects the key"), std::string::npos) << error;
}

} // namespace
