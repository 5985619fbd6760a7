// Reference kernels: straightforward loops in double. Layout ops, binary ops
// and reductions share one strided index walker; every sum that may be long
// (over a row, the batch, a reduced axis, a product's inner dimension)
// accumulates blockwise (BlockwiseSum).
#include "Kernels.h"

#include "tg/IR/AttentionVisibility.h"
#include "tg/runtime/GemmActivation.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace mlir::tg::eval::kernels {
namespace {

int64_t product(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A sum of terms added in turn, in blocks: kBlock terms into the block's
/// sum, then each block's sum into the total, so that rounding grows with
/// kBlock + n / kBlock terms rather than with n.
class BlockwiseSum {
public:
  void add(double term) {
    block += term;
    if (++inBlock == kBlock) {
      total += block;
      block = 0;
      inBlock = 0;
    }
  }
  double value() const { return total + block; }

private:
  static constexpr int kBlock = 64;
  double total = 0, block = 0;
  int inBlock = 0;
};

/// One BlockwiseSum per element of a tensor of `shape`, and the tensor of
/// their values.
struct BlockwiseSums {
  std::vector<int64_t> shape;
  std::vector<BlockwiseSum> sums;
  explicit BlockwiseSums(Shape shape);
  void add(int64_t i, double term) { sums[i].add(term); }
  Tensor value() const;
};

Tensor zeros(Shape shape) {
  return Tensor{std::vector<int64_t>(shape.begin(), shape.end()),
                std::vector<double>(product(shape), 0.0)};
}

BlockwiseSums::BlockwiseSums(Shape shape)
    : shape(shape.begin(), shape.end()), sums(product(shape)) {}

Tensor BlockwiseSums::value() const {
  Tensor out = zeros(shape);
  for (size_t i = 0; i < sums.size(); ++i)
    out.data[i] = sums[i].value();
  return out;
}

/// Row-major strides of a contiguous tensor of `shape`.
SmallVector<int64_t> contiguousStrides(Shape shape) {
  SmallVector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

/// Strides that read a contiguous tensor of shape `in` as if broadcast to
/// `out` (numpy rules: dims aligned at the end, size-1 dims repeat).
SmallVector<int64_t> broadcastStrides(Shape in, Shape out) {
  SmallVector<int64_t> inStrides = contiguousStrides(in);
  SmallVector<int64_t> strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  return strides;
}

/// Visits every index of `shape` in row-major order and calls
/// fn(linear, offsets): `linear` counts the visits and offsets[k] is the sum
/// over dims of index[d] * strides[k][d].
template <size_t N, typename Fn>
void walk(Shape shape, const std::array<SmallVector<int64_t>, N> &strides,
          Fn &&fn) {
  int64_t total = product(shape);
  SmallVector<int64_t> index(shape.size(), 0);
  std::array<int64_t, N> offsets{};
  for (int64_t linear = 0; linear < total; ++linear) {
    fn(linear, offsets);
    for (size_t d = shape.size(); d-- > 0;) {
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < shape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

/// The number of rows along the last dim and its size (a rank-0 tensor is one
/// row of one element).
std::pair<int64_t, int64_t> rowsOf(const Tensor &x) {
  int64_t width = x.shape.empty() ? 1 : x.shape.back();
  return {width == 0 ? 0 : x.numElements() / width, width};
}

/// Softmax of `n` values at `in` into `out` (subtracting the max first).
void softmaxRow(const double *in, double *out, int64_t n) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i)
    max = std::max(max, in[i]);
  BlockwiseSum sum;
  for (int64_t i = 0; i < n; ++i)
    sum.add(out[i] = std::exp(in[i] - max));
  for (int64_t i = 0; i < n; ++i)
    out[i] /= sum.value();
}

/// The row statistics shared by layer_norm and its gradient.
struct LayerNormRow {
  double mean, rstd;
};
LayerNormRow layerNormRow(const double *x, int64_t n, double epsilon) {
  BlockwiseSum sum, squares;
  for (int64_t i = 0; i < n; ++i)
    sum.add(x[i]);
  double mean = sum.value() / n;
  for (int64_t i = 0; i < n; ++i)
    squares.add((x[i] - mean) * (x[i] - mean));
  return {mean, 1 / std::sqrt(squares.value() / n + epsilon)};
}

double rmsRstd(const double *x, int64_t n, double epsilon) {
  BlockwiseSum squares;
  for (int64_t i = 0; i < n; ++i)
    squares.add(x[i] * x[i]);
  return 1 / std::sqrt(squares.value() / n + epsilon);
}

/// Attention dimensions; query head h reads key/value head h / group.
struct AttentionDims {
  int64_t batch, heads, kvHeads, queryLen, keyLen, headDim, group;
  explicit AttentionDims(const Tensor &q, const Tensor &k)
      : batch(q.shape[0]), heads(q.shape[1]), kvHeads(k.shape[1]),
        queryLen(q.shape[2]), keyLen(k.shape[2]), headDim(q.shape[3]),
        group(heads / kvHeads) {}
  int64_t queryRow(int64_t b, int64_t h, int64_t t) const {
    return ((b * heads + h) * queryLen + t) * headDim;
  }
  int64_t keyRow(int64_t b, int64_t h, int64_t s) const {
    return ((b * kvHeads + h / group) * keyLen + s) * headDim;
  }
  /// The first visible key of query position t and their number.
  std::pair<int64_t, int64_t> visible(int64_t t, bool causal, int64_t window) const {
    auto [first, end] = visibleKeyRange(t, keyLen, causal, window);
    return {first, std::max<int64_t>(0, end - first)};
  }
};

double dot(const double *a, const double *b, int64_t n) {
  BlockwiseSum sum;
  for (int64_t i = 0; i < n; ++i)
    sum.add(a[i] * b[i]);
  return sum.value();
}

/// The scaled scores of query row (b, h, t) with its visible keys, which
/// start at key `first`.
std::vector<double> attentionScores(const AttentionDims &dims, const Tensor &q,
                                    const Tensor &k, int64_t b, int64_t h,
                                    int64_t t, double scale, bool causal,
                                    int64_t window, int64_t &first) {
  auto [start, count] = dims.visible(t, causal, window);
  first = start;
  std::vector<double> scores(count);
  const double *query = &q.data[dims.queryRow(b, h, t)];
  for (int64_t s = 0; s < count; ++s)
    scores[s] = scale * dot(query, &k.data[dims.keyRow(b, h, first + s)],
                            dims.headDim);
  return scores;
}

/// The attention probabilities of query row (b, h, t) over its visible keys,
/// which start at key `first`.
std::vector<double> attentionRow(const AttentionDims &dims, const Tensor &q,
                                 const Tensor &k, int64_t b, int64_t h,
                                 int64_t t, double scale, bool causal,
                                 int64_t window, int64_t &first) {
  std::vector<double> scores =
      attentionScores(dims, q, k, b, h, t, scale, causal, window, first);
  softmaxRow(scores.data(), scores.data(), scores.size());
  return scores;
}
} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Tensor map(const Tensor &x, function_ref<double(double)> fn) {
  Tensor out = x;
  for (double &v : out.data)
    v = fn(v);
  return out;
}

Tensor binary(const Tensor &lhs, const Tensor &rhs, Shape resultShape,
              function_ref<double(double, double)> fn) {
  Tensor out = zeros(resultShape);
  walk<2>(resultShape,
          {broadcastStrides(lhs.shape, resultShape),
           broadcastStrides(rhs.shape, resultShape)},
          [&](int64_t i, const std::array<int64_t, 2> &at) {
            out.data[i] = fn(lhs.data[at[0]], rhs.data[at[1]]);
          });
  return out;
}

double gelu(double x, bool tanhApproximation) {
  if (!tanhApproximation)
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  return ::tg::runtime::geluTanh(x);
}

double geluDerivative(double x, bool tanhApproximation) {
  if (!tanhApproximation) {
    double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * pdf;
  }
  return ::tg::runtime::geluTanhDerivative(x);
}

static double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

double silu(double x) { return x * sigmoid(x); }

double siluDerivative(double x) {
  double s = sigmoid(x);
  return s * (1 + x * (1 - s));
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

Tensor broadcast(const Tensor &x, Shape resultShape) {
  Tensor out = zeros(resultShape);
  walk<1>(resultShape, {broadcastStrides(x.shape, resultShape)},
          [&](int64_t i, const std::array<int64_t, 1> &at) {
            out.data[i] = x.data[at[0]];
          });
  return out;
}

Tensor transpose(const Tensor &x, ArrayRef<int64_t> permutation) {
  SmallVector<int64_t> inStrides = contiguousStrides(x.shape);
  SmallVector<int64_t> shape, strides;
  for (int64_t p : permutation) {
    shape.push_back(x.shape[p]);
    strides.push_back(inStrides[p]);
  }
  Tensor out = zeros(shape);
  walk<1>(shape, {strides}, [&](int64_t i, const std::array<int64_t, 1> &at) {
    out.data[i] = x.data[at[0]];
  });
  return out;
}

/// The linear offset of `index` in a contiguous tensor of `shape`.
static int64_t offsetOf(Shape shape, ArrayRef<int64_t> index) {
  SmallVector<int64_t> strides = contiguousStrides(shape);
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d)
    offset += index[d] * strides[d];
  return offset;
}

Tensor slice(const Tensor &x, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  Tensor out = zeros(sizes);
  int64_t base = offsetOf(x.shape, offsets);
  walk<1>(sizes, {contiguousStrides(x.shape)},
          [&](int64_t i, const std::array<int64_t, 1> &at) {
            out.data[i] = x.data[base + at[0]];
          });
  return out;
}

Tensor pad(const Tensor &x, ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < x.shape.size(); ++d)
    shape.push_back(low[d] + x.shape[d] + high[d]);
  Tensor out = zeros(shape);
  int64_t base = offsetOf(shape, low);
  walk<1>(x.shape, {contiguousStrides(shape)},
          [&](int64_t i, const std::array<int64_t, 1> &at) {
            out.data[base + at[0]] = x.data[i];
          });
  return out;
}

Tensor concat(ArrayRef<const Tensor *> inputs, int64_t axis) {
  SmallVector<int64_t> shape(inputs[0]->shape.begin(), inputs[0]->shape.end());
  shape[axis] = 0;
  for (const Tensor *input : inputs)
    shape[axis] += input->shape[axis];
  Tensor out = zeros(shape);
  SmallVector<int64_t> strides = contiguousStrides(shape);
  int64_t base = 0;
  for (const Tensor *input : inputs) {
    walk<1>(input->shape, {strides},
            [&](int64_t i, const std::array<int64_t, 1> &at) {
              out.data[base + at[0]] = input->data[i];
            });
    base += input->shape[axis] * strides[axis];
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Reductions and matmul
//===----------------------------------------------------------------------===//

Tensor reduce(const Tensor &x, ArrayRef<int64_t> axes, Reduction kind,
              Shape resultShape) {
  SmallVector<int64_t> kept(x.shape.begin(), x.shape.end());
  int64_t count = 1;
  for (int64_t axis : axes) {
    count *= x.shape[axis];
    kept[axis] = 1;
  }
  SmallVector<int64_t> strides = broadcastStrides(kept, x.shape);
  if (kind == Reduction::Max) {
    Tensor out = zeros(resultShape);
    std::fill(out.data.begin(), out.data.end(),
              -std::numeric_limits<double>::infinity());
    walk<1>(x.shape, {strides},
            [&](int64_t i, const std::array<int64_t, 1> &at) {
              double &acc = out.data[at[0]];
              double v = x.data[i];
              if (v > acc || std::isnan(v))
                acc = v;
            });
    return out;
  }
  BlockwiseSums sums(resultShape);
  walk<1>(x.shape, {strides}, [&](int64_t i, const std::array<int64_t, 1> &at) {
    sums.add(at[0], x.data[i]);
  });
  Tensor out = sums.value();
  if (kind == Reduction::Mean)
    for (double &v : out.data)
      v /= count;
  return out;
}

Tensor matmul(const Tensor &lhs, const Tensor &rhs, bool transposeLhs,
              bool transposeRhs) {
  size_t rank = lhs.shape.size();
  int64_t m = lhs.shape[rank - (transposeLhs ? 1 : 2)];
  int64_t k = lhs.shape[rank - (transposeLhs ? 2 : 1)];
  int64_t n = rhs.shape[rhs.shape.size() - (transposeRhs ? 2 : 1)];
  // Element (i, kk) of a lhs matrix is at i * lhsRow + kk * lhsCol, and
  // (kk, j) of a rhs matrix at kk * rhsRow + j * rhsCol.
  int64_t lhsRow = transposeLhs ? 1 : k, lhsCol = transposeLhs ? m : 1;
  int64_t rhsRow = transposeRhs ? 1 : n, rhsCol = transposeRhs ? k : 1;
  int64_t rhsBatchStride = rhs.shape.size() == 2 ? 0 : k * n;

  SmallVector<int64_t> shape(lhs.shape.begin(), lhs.shape.end() - 2);
  int64_t batches = product(shape);
  shape.append({m, n});
  Tensor out = zeros(shape);
  std::vector<BlockwiseSum> row(n);
  for (int64_t b = 0; b < batches; ++b) {
    const double *a = &lhs.data[b * m * k];
    const double *bm = rhs.data.data() + b * rhsBatchStride;
    double *c = &out.data[b * m * n];
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), BlockwiseSum());
      for (int64_t kk = 0; kk < k; ++kk) {
        double aik = a[i * lhsRow + kk * lhsCol];
        for (int64_t j = 0; j < n; ++j)
          row[j].add(aik * bm[kk * rhsRow + j * rhsCol]);
      }
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] = row[j].value();
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias,
                 double epsilon) {
  Tensor out = zeros(x.shape);
  auto [rows, n] = rowsOf(x);
  for (int64_t r = 0; r < rows; ++r) {
    const double *in = &x.data[r * n];
    LayerNormRow stats = layerNormRow(in, n, epsilon);
    for (int64_t i = 0; i < n; ++i)
      out.data[r * n + i] =
          (in[i] - stats.mean) * stats.rstd * weight.data[i] + bias.data[i];
  }
  return out;
}

std::vector<Tensor> layerNormGrad(const Tensor &x, const Tensor &weight,
                                  const Tensor &resultGrad, double epsilon) {
  Tensor dx = zeros(x.shape);
  BlockwiseSums dw(weight.shape), db(weight.shape);
  auto [rows, n] = rowsOf(x);
  std::vector<double> xhat(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double *in = &x.data[r * n], *dy = &resultGrad.data[r * n];
    LayerNormRow stats = layerNormRow(in, n, epsilon);
    // With g = dy * w: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    BlockwiseSum sumG, sumGXhat;
    for (int64_t i = 0; i < n; ++i) {
      xhat[i] = (in[i] - stats.mean) * stats.rstd;
      double g = dy[i] * weight.data[i];
      sumG.add(g);
      sumGXhat.add(g * xhat[i]);
      dw.add(i, dy[i] * xhat[i]);
      db.add(i, dy[i]);
    }
    double meanG = sumG.value() / n, meanGXhat = sumGXhat.value() / n;
    for (int64_t i = 0; i < n; ++i)
      dx.data[r * n + i] = stats.rstd * (dy[i] * weight.data[i] - meanG -
                                         xhat[i] * meanGXhat);
  }
  return {dx, dw.value(), db.value()};
}

Tensor rmsNorm(const Tensor &x, const Tensor &weight, double epsilon) {
  Tensor out = zeros(x.shape);
  auto [rows, n] = rowsOf(x);
  for (int64_t r = 0; r < rows; ++r) {
    const double *in = &x.data[r * n];
    double rstd = rmsRstd(in, n, epsilon);
    for (int64_t i = 0; i < n; ++i)
      out.data[r * n + i] = in[i] * rstd * weight.data[i];
  }
  return out;
}

std::vector<Tensor> rmsNormGrad(const Tensor &x, const Tensor &weight,
                                const Tensor &resultGrad, double epsilon) {
  Tensor dx = zeros(x.shape);
  BlockwiseSums dw(weight.shape);
  auto [rows, n] = rowsOf(x);
  for (int64_t r = 0; r < rows; ++r) {
    const double *in = &x.data[r * n], *dy = &resultGrad.data[r * n];
    double rstd = rmsRstd(in, n, epsilon);
    // With g = dy * w: dx = rstd * g - rstd^3 * x * mean(g * x).
    BlockwiseSum sumGX;
    for (int64_t i = 0; i < n; ++i) {
      sumGX.add(dy[i] * weight.data[i] * in[i]);
      dw.add(i, dy[i] * in[i] * rstd);
    }
    double meanGX = sumGX.value() / n;
    for (int64_t i = 0; i < n; ++i)
      dx.data[r * n + i] = rstd * dy[i] * weight.data[i] -
                           rstd * rstd * rstd * in[i] * meanGX;
  }
  return {dx, dw.value()};
}

//===----------------------------------------------------------------------===//
// Softmax and attention
//===----------------------------------------------------------------------===//

Tensor softmax(const Tensor &x) {
  Tensor out = zeros(x.shape);
  auto [rows, n] = rowsOf(x);
  for (int64_t r = 0; r < rows; ++r)
    softmaxRow(&x.data[r * n], &out.data[r * n], n);
  return out;
}

Tensor softmaxGrad(const Tensor &result, const Tensor &resultGrad) {
  Tensor dx = zeros(result.shape);
  auto [rows, n] = rowsOf(result);
  for (int64_t r = 0; r < rows; ++r) {
    const double *y = &result.data[r * n], *dy = &resultGrad.data[r * n];
    double yDotDy = dot(y, dy, n);
    for (int64_t i = 0; i < n; ++i)
      dx.data[r * n + i] = y[i] * (dy[i] - yDotDy);
  }
  return dx;
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 double scale, bool causal, int64_t window) {
  AttentionDims dims(q, k);
  BlockwiseSums out(q.shape);
  for (int64_t b = 0; b < dims.batch; ++b)
    for (int64_t h = 0; h < dims.heads; ++h)
      for (int64_t t = 0; t < dims.queryLen; ++t) {
        int64_t first;
        std::vector<double> p =
            attentionRow(dims, q, k, b, h, t, scale, causal, window, first);
        int64_t o = dims.queryRow(b, h, t);
        for (int64_t s = 0; s < (int64_t)p.size(); ++s) {
          const double *value = &v.data[dims.keyRow(b, h, first + s)];
          for (int64_t d = 0; d < dims.headDim; ++d)
            out.add(o + d, p[s] * value[d]);
        }
      }
  return out.value();
}

Tensor attentionLogSumExp(const Tensor &q, const Tensor &k, double scale,
                          bool causal, int64_t window) {
  AttentionDims dims(q, k);
  Tensor out = zeros({dims.batch, dims.heads, dims.queryLen});
  for (int64_t b = 0; b < dims.batch; ++b)
    for (int64_t h = 0; h < dims.heads; ++h)
      for (int64_t t = 0; t < dims.queryLen; ++t) {
        int64_t first;
        std::vector<double> scores =
            attentionScores(dims, q, k, b, h, t, scale, causal, window, first);
        double max = -std::numeric_limits<double>::infinity();
        for (double x : scores)
          max = std::max(max, x);
        BlockwiseSum sum;
        for (double x : scores)
          sum.add(std::exp(x - max));
        out.data[(b * dims.heads + h) * dims.queryLen + t] =
            max + std::log(sum.value());
      }
  return out;
}

std::vector<Tensor> attentionGrad(const Tensor &q, const Tensor &k,
                                  const Tensor &v, const Tensor &resultGrad,
                                  double scale, bool causal, int64_t window) {
  AttentionDims dims(q, k);
  BlockwiseSums dq(q.shape), dk(k.shape), dv(v.shape);
  for (int64_t b = 0; b < dims.batch; ++b)
    for (int64_t h = 0; h < dims.heads; ++h)
      for (int64_t t = 0; t < dims.queryLen; ++t) {
        int64_t first;
        std::vector<double> p =
            attentionRow(dims, q, k, b, h, t, scale, causal, window, first);
        int64_t qRow = dims.queryRow(b, h, t);
        const double *dout = &resultGrad.data[qRow];
        // dp_s = dO . v_s; ds_s = p_s (dp_s - sum_s' p_s' dp_s').
        std::vector<double> dp(p.size());
        BlockwiseSum sumPDp;
        for (int64_t s = 0; s < (int64_t)p.size(); ++s) {
          int64_t kvRow = dims.keyRow(b, h, first + s);
          dp[s] = dot(dout, &v.data[kvRow], dims.headDim);
          sumPDp.add(p[s] * dp[s]);
          for (int64_t d = 0; d < dims.headDim; ++d)
            dv.add(kvRow + d, p[s] * dout[d]);
        }
        double pDotDp = sumPDp.value();
        for (int64_t s = 0; s < (int64_t)p.size(); ++s) {
          int64_t kvRow = dims.keyRow(b, h, first + s);
          double ds = scale * p[s] * (dp[s] - pDotDp);
          for (int64_t d = 0; d < dims.headDim; ++d) {
            dq.add(qRow + d, ds * k.data[kvRow + d]);
            dk.add(kvRow + d, ds * q.data[qRow + d]);
          }
        }
      }
  return {dq.value(), dk.value(), dv.value()};
}

//===----------------------------------------------------------------------===//
// RoPE, cross-entropy, embedding
//===----------------------------------------------------------------------===//

Tensor rope(const Tensor &x, const std::vector<double> &frequencies,
            bool inverse) {
  int64_t seq = x.shape[2], dim = x.shape[3], half = dim / 2;
  int64_t planes = x.numElements() / (seq * dim == 0 ? 1 : seq * dim);
  Tensor out = zeros(x.shape);
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t i = 0; i < half; ++i) {
      double angle = t * frequencies[i] * (inverse ? -1 : 1);
      double c = std::cos(angle), s = std::sin(angle);
      for (int64_t p = 0; p < planes; ++p) {
        int64_t row = (p * seq + t) * dim;
        double x1 = x.data[row + i], x2 = x.data[row + i + half];
        out.data[row + i] = x1 * c - x2 * s;
        out.data[row + i + half] = x2 * c + x1 * s;
      }
    }
  return out;
}

Tensor crossEntropy(const Tensor &logits, const Tensor &targets) {
  auto [rows, vocab] = rowsOf(logits);
  BlockwiseSum total;
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = &logits.data[r * vocab];
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < vocab; ++i)
      max = std::max(max, row[i]);
    BlockwiseSum sum;
    for (int64_t i = 0; i < vocab; ++i)
      sum.add(std::exp(row[i] - max));
    total.add(max + std::log(sum.value()) - row[(int64_t)targets.data[r]]);
  }
  return Tensor{{}, {total.value() / targets.numElements()}};
}

Tensor crossEntropyGrad(const Tensor &logits, const Tensor &targets,
                        const Tensor &lossGrad) {
  Tensor dx = zeros(logits.shape);
  auto [rows, vocab] = rowsOf(logits);
  double factor = lossGrad.data[0] / targets.numElements();
  for (int64_t r = 0; r < rows; ++r) {
    double *row = &dx.data[r * vocab];
    softmaxRow(&logits.data[r * vocab], row, vocab);
    row[(int64_t)targets.data[r]] -= 1;
    for (int64_t i = 0; i < vocab; ++i)
      row[i] *= factor;
  }
  return dx;
}

Tensor embedding(const Tensor &table, const Tensor &indices, int64_t offset) {
  int64_t vocab = table.shape[0], dim = table.shape[1];
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(dim);
  Tensor out = zeros(shape);
  for (int64_t p = 0; p < indices.numElements(); ++p) {
    int64_t row = (int64_t)indices.data[p] - offset;
    if (row < 0 || row >= vocab)
      continue;
    auto from = table.data.begin() + row * dim;
    std::copy(from, from + dim, out.data.begin() + p * dim);
  }
  return out;
}

Tensor embeddingGrad(const Tensor &indices, const Tensor &resultGrad,
                     int64_t vocab, int64_t offset) {
  int64_t dim = resultGrad.shape.back();
  BlockwiseSums out({vocab, dim});
  for (int64_t p = 0; p < indices.numElements(); ++p) {
    int64_t row = (int64_t)indices.data[p] - offset;
    if (row < 0 || row >= vocab)
      continue;
    for (int64_t d = 0; d < dim; ++d)
      out.add(row * dim + d, resultGrad.data[p * dim + d]);
  }
  return out.value();
}

//===----------------------------------------------------------------------===//
// Partitioned programs
//===----------------------------------------------------------------------===//

Tensor pick(const Tensor &x, const Tensor &indices, int64_t offset) {
  int64_t vocab = x.shape.back();
  Tensor out = zeros(indices.shape);
  for (int64_t r = 0; r < indices.numElements(); ++r) {
    int64_t column = (int64_t)indices.data[r] - offset;
    if (column >= 0 && column < vocab)
      out.data[r] = x.data[r * vocab + column];
  }
  return out;
}

Tensor pickGrad(const Tensor &indices, const Tensor &resultGrad, int64_t vocab,
                int64_t offset) {
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(vocab);
  Tensor out = zeros(shape);
  for (int64_t r = 0; r < indices.numElements(); ++r) {
    int64_t column = (int64_t)indices.data[r] - offset;
    if (column >= 0 && column < vocab)
      out.data[r * vocab + column] = resultGrad.data[r];
  }
  return out;
}

Tensor shardSlice(const Tensor &x, int64_t dim, int64_t block, int64_t size) {
  std::vector<int64_t> offsets(x.shape.size(), 0), sizes = x.shape;
  offsets[dim] = block * size;
  sizes[dim] = size;
  return slice(x, offsets, sizes);
}

Tensor shardUnslice(const Tensor &x, Shape wholeShape, int64_t dim,
                    int64_t block) {
  std::vector<int64_t> low(wholeShape.size(), 0), high(wholeShape.size(), 0);
  low[dim] = block * x.shape[dim];
  high[dim] = wholeShape[dim] - low[dim] - x.shape[dim];
  return pad(x, low, high);
}

} // namespace mlir::tg::eval::kernels
