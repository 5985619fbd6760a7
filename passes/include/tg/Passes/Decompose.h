#ifndef TG_PASSES_DECOMPOSE_H
#define TG_PASSES_DECOMPOSE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::tg {

/// Rewrites every tg.attention and tg.attention_grad in `func` into simpler tg
/// ops (reshape, matmul, mul, add, softmax, softmax_grad, constant), so that
/// code generation sees the matrix products as plain batched GEMMs. What the
/// function computes is unchanged.
///
/// With query [B, Hq, T, D], key/value [B, Hkv, S, D] and G = Hq / Hkv, the
/// query is viewed as q' = [B, Hkv, G*T, D] (query heads h = kv*G + g are
/// contiguous, so no key/value repeat is needed) and
///   P    = softmax(scale * q' K^T + mask)        [B, Hkv, G*T, S]
///   out  = reshape(P V)                           [B, Hq, T, D]
/// where `mask` (causal only) is a [G*T, S] constant, -inf where key s comes
/// after the query position (row r mod T). One mask constant per (shape, T,
/// element type) is built at the top of the function and shared. The gradient
/// reuses the forward's P or recomputes it (DecomposeAttentionOptions) and
/// uses
///   dV = P^T dO',  dS = scale * softmax_grad(P, dO' V^T),
///   dQ = reshape(dS K),  dK = dS^T q'.
/// With G = 1 the reshapes are left out. New values are named after the
/// attention's NameLoc ("<name>_scores", "<name>_probs", ...); the forward
/// result keeps the op's own location. The scale becomes a rank-0 constant of
/// the element type, so in f32/bf16/f16 programs it is rounded to that type
/// (exact for power-of-two scales such as 1/sqrt(64)).
///
/// A causal op of at least 2 * kMinBlockQueries queries is decomposed in
/// `causalBlocks` blocks of queries, each over only the keys its queries see:
/// block i of n has queries [i T/n, (i+1) T/n) and (top-left causal, as
/// visibleKeyRange) keys [0, (i+1) T/n), so the [T, S] products, the softmax
/// and their gradients do (n+1)/2n of the work and memory (3/4 with two
/// blocks). The blocks' outputs and query gradients are concatenated along
/// the sequence, their key and value gradients zero-padded to S keys and
/// added. Block i's values are named "<name>_<suffix>_b<i>".
///
/// The function first records the model's FLOPs (kModelFlopsAttr): the
/// products may do fewer (kept probabilities, blocks), and MFU counts the
/// model's, as for flash attention.
/// Fails (with a diagnostic on the op) only for shapes that are not static.
/// The causal blocks' fewest queries: below it the products are too thin to
/// gain from leaving out keys.
constexpr int64_t kMinBlockQueries = 256;

struct DecomposeAttentionOptions {
  /// The gradient reuses the forward's P where P's elements per query token
  /// (Hq * S) are at most `factor` times the attention output's (Hq * D),
  /// i.e. S <= factor * D: P then costs about as much memory between the
  /// sweeps as a block's other saved activations (an MLP's hidden layer is
  /// 4 d per token), and saves the gradient a batched GEMM and a softmax.
  /// Longer sequences recompute P, as Megatron's selective recomputation
  /// does. 0: always recompute.
  double factor = 4;
  /// At most this many MiB of kept probabilities in a function (0: no
  /// limit), counted over the gradients in program order: a GPU, whose
  /// memory rather than its caches bounds what it keeps, keeps P whatever
  /// the sequence (factor infinite) up to a share of its memory, and
  /// recomputes the rest.
  double budgetMib = 0;
  /// Each decision and its reason as a remark on the gradient op.
  bool remarks = false;
  /// Blocks of queries of a causal attention, at most one per
  /// `minBlockQueries` queries (1: the whole op at once).
  int64_t causalBlocks = 2;
  int64_t minBlockQueries = kMinBlockQueries;
};
/// Whether a gradient with `keys` per query row and head dim `headDim`
/// reuses its forward's probabilities under `options`.
bool keepsProbabilities(int64_t keys, int64_t headDim,
                        const DecomposeAttentionOptions &options);

LogicalResult decomposeAttention(func::FuncOp func,
                                 const DecomposeAttentionOptions &options = {});

} // namespace mlir::tg

#endif
