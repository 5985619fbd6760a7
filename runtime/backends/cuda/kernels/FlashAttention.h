// The runtime's flash attention kernels for CUDA (FlashAttention.cu): what
// the backend passes them, and how it launches them. Shared by the kernels,
// the CUDA backend and the kernels' emulated test, so it holds only plain
// data.
#ifndef TG_RUNTIME_CUDA_KERNELS_FLASHATTENTION_H
#define TG_RUNTIME_CUDA_KERNELS_FLASHATTENTION_H

#include <cstdint>

namespace tg::flash {

/// Rows of queries (forward, query gradients) or keys (key and value
/// gradients) one block of 128 threads computes: 16 a warp.
constexpr int kBlockRows = 64;
/// Keys (forward, query gradients) or queries (key and value gradients) of
/// one tile of the inner loop.
constexpr int kTileRows = 64;
constexpr int kThreads = 128;
/// Shared-memory rows are padded by 8 elements (16 bytes), so a warp's
/// fragment loads of 8 rows fall in distinct banks.
constexpr int paddedRow(int headDim) { return headDim + 8; }

/// One bf16 tensor [batch, heads, rows, head dim] in device memory, rows
/// contiguous: element (b, h, r, d) is at base + b * batchStride +
/// h * headStride + r * rowStride + d. Strides are multiples of 8 and the
/// base 16-byte aligned, for 16-byte loads.
struct Tensor {
  uint64_t base;
  int64_t batchStride, headStride, rowStride;
};

/// The operands of both directions (unused ones are zero). `logsumexp` and
/// `delta` are f32 [batch, query heads, query length], packed. Query heads
/// h use key head h / (queryHeads / keyHeads). Query t sees keys s with
/// s <= t (causal) and s > t - window (window > 0): tg.attention's rule.
struct Params {
  Tensor query, key, value, result, resultGrad, queryGrad, keyGrad, valueGrad;
  uint64_t logsumexp, delta;
  int32_t batch, queryHeads, keyHeads, queryLen, keyLen;
  int32_t causal, window;
  float scale;
};

/// Shared memory a block of each kernel needs (bytes): four tiles of 64
/// padded rows (the forward uses three), and the backward's per-row f32s.
constexpr unsigned sharedBytes(int headDim) {
  return unsigned(4 * kBlockRows * paddedRow(headDim) * 2 + 2 * kTileRows * 4);
}

} // namespace tg::flash

#endif
