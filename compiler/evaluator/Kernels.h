// The math of the reference evaluator: one function per tg op family, on
// dense row-major tensors in double. Inputs are assumed valid (the op
// verifiers and the dispatcher check shapes, attributes and index ranges);
// axes are already normalised to [0, rank).
#ifndef TG_EVALUATOR_KERNELS_H
#define TG_EVALUATOR_KERNELS_H

#include "tg/Evaluator/Evaluator.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tg::eval::kernels {

using Shape = ArrayRef<int64_t>;

// Elementwise.
Tensor map(const Tensor &x, function_ref<double(double)> fn);
/// fn applied with numpy broadcasting of both operands to `resultShape`.
Tensor binary(const Tensor &lhs, const Tensor &rhs, Shape resultShape,
              function_ref<double(double, double)> fn);
double gelu(double x, bool tanhApproximation);
double geluDerivative(double x, bool tanhApproximation);
double silu(double x);
double siluDerivative(double x);

// Layout.
Tensor broadcast(const Tensor &x, Shape resultShape);
/// Result dim i is input dim permutation[i].
Tensor transpose(const Tensor &x, ArrayRef<int64_t> permutation);
Tensor slice(const Tensor &x, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes);
/// Zero padding.
Tensor pad(const Tensor &x, ArrayRef<int64_t> low, ArrayRef<int64_t> high);
Tensor concat(ArrayRef<const Tensor *> inputs, int64_t axis);

// Reductions over `axes`; the result has `resultShape` (with or without the
// reduced dims kept as size 1: the element order is the same).
enum class Reduction { Sum, Mean, Max };
Tensor reduce(const Tensor &x, ArrayRef<int64_t> axes, Reduction kind,
              Shape resultShape);

/// lhs [batch..., M, K] (or [batch..., K, M] transposed) times rhs
/// [batch..., K, N] (or [batch..., N, K] transposed, or a shared rank-2 rhs).
Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs);

// Norms over the last dim.
Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias,
                 double epsilon);
/// Returns {input_grad, weight_grad, bias_grad}.
std::vector<Tensor> layerNormGrad(const Tensor &x, const Tensor &weight,
                                  const Tensor &resultGrad, double epsilon);
Tensor rmsNorm(const Tensor &x, const Tensor &weight, double epsilon);
/// Returns {input_grad, weight_grad}.
std::vector<Tensor> rmsNormGrad(const Tensor &x, const Tensor &weight,
                                const Tensor &resultGrad, double epsilon);

// Softmax over the last dim.
Tensor softmax(const Tensor &x);
Tensor softmaxGrad(const Tensor &result, const Tensor &resultGrad);

/// q [B, Hq, T, D], k and v [B, Hkv, S, D]; with `causal`, query t sees
/// keys s <= t, and with a `window` W > 0 only t - W < s <= t.
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 double scale, bool causal, int64_t window = 0);
/// log(sum over the visible keys s of exp(scale * q_t . k_s)): [B, Hq, T].
Tensor attentionLogSumExp(const Tensor &q, const Tensor &k, double scale,
                          bool causal, int64_t window = 0);
/// Returns {query_grad, key_grad, value_grad}.
std::vector<Tensor> attentionGrad(const Tensor &q, const Tensor &k,
                                  const Tensor &v, const Tensor &resultGrad,
                                  double scale, bool causal, int64_t window = 0);

/// x [B, H, T, D], Hugging Face rotate_half convention.
/// Rotates pairs (i, i + D/2) at position t by t * frequencies[i].
Tensor rope(const Tensor &x, const std::vector<double> &frequencies,
            bool inverse);

/// Mean over tokens of logsumexp(logits) - logits[target]; a rank-0 result.
Tensor crossEntropy(const Tensor &logits, const Tensor &targets);
Tensor crossEntropyGrad(const Tensor &logits, const Tensor &targets,
                        const Tensor &lossGrad);

/// Rows of table [V, D] at `indices` - offset -> [indices..., D]; an index
/// outside [offset, offset + V) gives zeros.
Tensor embedding(const Tensor &table, const Tensor &indices, int64_t offset);
/// Scatter-adds resultGrad [indices..., D] into zeros [vocab, D] at rows
/// index - offset (indices outside the table add nothing).
Tensor embeddingGrad(const Tensor &indices, const Tensor &resultGrad,
                     int64_t vocab, int64_t offset);

/// x [..., V] at `indices` - offset along the last dim -> [...] (0 outside).
Tensor pick(const Tensor &x, const Tensor &indices, int64_t offset);
/// Zeros [..., vocab] with resultGrad at `indices` - offset.
Tensor pickGrad(const Tensor &indices, const Tensor &resultGrad, int64_t vocab,
                int64_t offset);

/// Block `block` of `x` along `dim`, of `size` elements there.
Tensor shardSlice(const Tensor &x, int64_t dim, int64_t block, int64_t size);
/// Zeros of `wholeShape` with `x` at block `block` along `dim`.
Tensor shardUnslice(const Tensor &x, Shape wholeShape, int64_t dim,
                    int64_t block);

} // namespace mlir::tg::eval::kernels

#endif
