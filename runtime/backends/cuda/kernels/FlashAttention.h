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
/// With `ropeCos` and `ropeSin` (f32 [max(queryLen, keyLen), D/2]: the
/// cosine and sine of each position's pair angles), the kernels rotate the
/// queries and keys they read by the rotary position embedding (pair
/// (i, i + D/2) of position t by table row t, i), and the query and key
/// gradients back: tg.rope's rotation applied inside. With `queryGradSum`
/// (f32 [batch, query heads, query length, D], packed), the backward is
/// one pass over the key blocks: each adds its share of dQ there
/// (atomically, so the sum's order varies from run to run), and a last
/// kernel writes queryGrad from it. Without it, dQ is a kernel of its own
/// that recomputes the probabilities, and every bit is the same each run.
struct Params {
  Tensor query, key, value, result, resultGrad, queryGrad, keyGrad, valueGrad;
  uint64_t logsumexp, delta, ropeCos, ropeSin, queryGradSum;
  int32_t batch, queryHeads, keyHeads, queryLen, keyLen;
  int32_t causal, window;
  float scale;
};

/// The module's entry points for one head dim (tg_flash_attention_<name>_d<D>).
/// The backward runs Delta, then KeyValueGrads and QueryGrads, or (with
/// Params::queryGradSum) KeyValueGradsAddingQuery and QueryGradsFromSum.
enum class Kernel {
  Forward,
  Delta,
  KeyValueGrads,
  QueryGrads,
  KeyValueGradsAddingQuery,
  QueryGradsFromSum
};
constexpr int kKernels = 6;
constexpr const char *kernelName(Kernel kernel) {
  switch (kernel) {
  case Kernel::Forward: return "forward";
  case Kernel::Delta: return "delta";
  case Kernel::KeyValueGrads: return "key_value_grads";
  case Kernel::QueryGrads: return "query_grads";
  case Kernel::KeyValueGradsAddingQuery: return "key_value_grads_adding_query";
  case Kernel::QueryGradsFromSum: return "query_grads_from_sum";
  }
  return "";
}

/// Rows one block of `kernel` covers (queries, or keys for the key and
/// value gradients): the launch's grid is those rows over this.
constexpr int blockRows(Kernel kernel) {
  switch (kernel) {
  case Kernel::Delta:
    return kThreads / 32;
  case Kernel::Forward:
  case Kernel::KeyValueGrads:
  case Kernel::QueryGrads:
  case Kernel::KeyValueGradsAddingQuery:
  case Kernel::QueryGradsFromSum:
    return kBlockRows;
  }
  return 0;
}

/// Queries of one tile of the key and value gradients' loop. Head dim 128
/// takes 32: its dK and dV accumulators are 128 registers a thread, and a
/// tile's probabilities with theirs would spill.
constexpr int keyGradQueryRows(int headDim) { return headDim == 128 ? 32 : kTileRows; }

/// The transposed dS tile through which KeyValueGradsAddingQuery's warps
/// hand each other dS (its 64 keys x a tile's queries, bf16): rows of
/// that many queries, padded by 8.
constexpr int dsTransposedRow(int headDim) { return keyGradQueryRows(headDim) + 8; }

/// Shared memory a block of `kernel` needs (bytes): the tiles of its own
/// rows, two stages of the tiles its loop runs over (one is computed while
/// the next is copied in), and the backward's f32s of each query row
/// (log-sum-exp, delta): in both stages where the loop is over queries.
constexpr unsigned sharedBytes(Kernel kernel, int headDim) {
  const int row = paddedRow(headDim) * 2;
  const int queries = keyGradQueryRows(headDim);
  const int keyValueGrads = 2 * kBlockRows * row + 2 * 2 * queries * row + 2 * 2 * queries * 4;
  switch (kernel) {
  case Kernel::Forward: // q; k and v
    return unsigned(kBlockRows * row + 2 * 2 * kTileRows * row);
  case Kernel::Delta:
    return 0;
  case Kernel::KeyValueGrads: // k, v; q and dO; log-sum-exp and delta
    return unsigned(keyValueGrads);
  case Kernel::QueryGrads: // q, dO, log-sum-exp and delta; k and v
    return unsigned(2 * kBlockRows * row + 2 * kBlockRows * 4 + 2 * 2 * kTileRows * row);
  case Kernel::KeyValueGradsAddingQuery: // and dS transposed
    return unsigned(keyValueGrads + kBlockRows * dsTransposedRow(headDim) * 2);
  case Kernel::QueryGradsFromSum: // dQ's rows, rounded, on their way out
    return unsigned(kBlockRows * row);
  }
  return 0;
}

} // namespace tg::flash

#endif
