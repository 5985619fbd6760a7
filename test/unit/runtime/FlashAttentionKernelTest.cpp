// The CUDA backend's flash attention kernels, run on the host by the SIMT
// emulator (runtime/backends/cuda/kernels/Simt.h): the same source nvcc
// compiles, with mma.sync and the shuffles given their PTX semantics. Checked
// against attention in float64 from the same bf16 inputs.
//
// Tolerances: the kernels round three things to bf16 (unit roundoff 2^-9):
// the probabilities before P V, the result (which the backward's delta also
// reads), and dS before dS K and dS^T Q. Rounding errors of independent
// elements add in quadrature, so a normwise relative error a few times 2^-9
// is expected; 1e-2 leaves room and still fails for a wrong mask, scale or
// fragment (those give errors of order 1). The log-sum-exp is f32 all the
// way, within 1e-4 absolute. With a rotary position embedding the kernels
// round the rotated queries and keys to bf16, as tg.rope's result is: the
// reference rotates them in float64 and rounds them likewise (the gradients
// it rotates back in float64).
#include "FlashAttention.cu"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

namespace {

using tg::flash::Params;
using tg::flash::Tensor;

struct Shape {
  int batch, queryHeads, keyHeads, queryLen, keyLen, headDim;
  bool causal;
  int window;
  /// The rotary position embedding's theta (0: none).
  double ropeTheta = 0;
};

/// A bf16 tensor [batch, heads, rows, D] in host memory at element strides:
/// a buffer of its own, head-major or token-major ([batch, rows, heads, D], as
/// projections write heads), or a slot of a fused buffer.
struct HostTensor {
  std::shared_ptr<std::vector<uint16_t>> storage;
  size_t offset;
  int heads, rows, dim;
  int64_t batchStride, headStride, rowStride;

  size_t at(int b, int h, int r, int d) const {
    return offset + b * batchStride + h * headStride + r * rowStride + d;
  }
  double get(int b, int h, int r, int d) const {
    return tg::simt::bf16ToFloat((*storage)[at(b, h, r, d)]);
  }
  Tensor device() const {
    return {reinterpret_cast<uint64_t>(storage->data() + offset), batchStride, headStride,
            rowStride};
  }
};

HostTensor ownTensor(int batch, int heads, int rows, int dim, bool tokenMajor) {
  auto storage = std::make_shared<std::vector<uint16_t>>(size_t(batch) * heads * rows * dim);
  int64_t plane = int64_t(heads) * rows * dim;
  return tokenMajor ? HostTensor{storage, 0, heads, rows, dim, plane, dim, int64_t(heads) * dim}
                    : HostTensor{storage, 0, heads, rows, dim, plane, int64_t(rows) * dim, dim};
}

/// Slot `slot` of `fused`, a [batch, rows, slots x heads x dim] buffer (a fused
/// q, k, v projection or its gradient): heads read where it holds them.
HostTensor slotOf(std::shared_ptr<std::vector<uint16_t>> fused, int slots, int slot, int heads,
                  int rows, int dim) {
  int64_t width = int64_t(slots) * heads * dim;
  return {std::move(fused), size_t(slot) * heads * dim, heads, rows, dim, rows * width, dim, width};
}

void fillRandom(std::mt19937 &rng, std::vector<uint16_t> &bits, double spread) {
  std::normal_distribution<float> normal(0.f, float(spread));
  for (uint16_t &x : bits)
    x = tg::simt::roundToBf16(normal(rng));
}

HostTensor randomTensor(std::mt19937 &rng, int batch, int heads, int rows, int dim,
                        bool tokenMajor, double spread) {
  HostTensor t = ownTensor(batch, heads, rows, dim, tokenMajor);
  fillRandom(rng, *t.storage, spread);
  return t;
}

bool sees(const Shape &s, int t, int key) {
  return key < s.keyLen && (!s.causal || key <= t) && (s.window <= 0 || key > t - s.window);
}

struct Reference {
  std::vector<double> result, logsumexp, queryGrad, keyGrad, valueGrad;
};

/// A tensor's elements in float64, packed [b][h][row][d].
std::vector<double> packed(const HostTensor &x, int batch) {
  std::vector<double> values;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < x.heads; ++h)
      for (int r = 0; r < x.rows; ++r)
        for (int d = 0; d < x.dim; ++d)
          values.push_back(x.get(b, h, r, d));
  return values;
}

/// The rotary position embedding's angles: pair i of position t turns by
/// t * theta^(-2i/D) (tg.rope's frequencies without scaling).
struct Rope {
  int dim;
  double theta;
  double angle(int t, int i) const { return t * std::pow(theta, -2.0 * i / dim); }
  /// The tables the kernels read: f32 [positions, D/2].
  std::vector<float> table(int positions, double (*f)(double)) const {
    std::vector<float> values;
    for (int t = 0; t < positions; ++t)
      for (int i = 0; i < dim / 2; ++i)
        values.push_back(float(f(angle(t, i))));
    return values;
  }
  /// Packed [b][h][row][d] rows rotated in float64 (back: `inverse`),
  /// rounded to bf16 where `round`.
  void rotate(std::vector<double> &x, int rows, bool inverse, bool round) const {
    const int half = dim / 2;
    for (size_t row = 0; row < x.size() / dim; ++row)
      for (int i = 0; i < half; ++i) {
        const double a = (inverse ? -1 : 1) * angle(int(row % rows), i);
        double &x1 = x[row * dim + i], &x2 = x[row * dim + i + half];
        const double y1 = x1 * std::cos(a) - x2 * std::sin(a);
        const double y2 = x2 * std::cos(a) + x1 * std::sin(a);
        x1 = round ? tg::simt::bf16ToFloat(tg::simt::roundToBf16(float(y1))) : y1;
        x2 = round ? tg::simt::bf16ToFloat(tg::simt::roundToBf16(float(y2))) : y2;
      }
  }
};

/// Attention and its gradients in float64, indexed [b][h][row][d] packed,
/// from q and k packed (rotated, where the kernels rotate them).
Reference reference(const Shape &s, double scale, const std::vector<double> &qs,
                    const std::vector<double> &ks, const HostTensor &v, const HostTensor &dout) {
  const int D = s.headDim;
  auto qAt = [&](int b, int h, int t, int d) {
    return qs[((size_t(b) * s.queryHeads + h) * s.queryLen + t) * D + d];
  };
  auto kAt = [&](int b, int h, int j, int d) {
    return ks[((size_t(b) * s.keyHeads + h) * s.keyLen + j) * D + d];
  };
  const int T = s.queryLen, S = s.keyLen, group = s.queryHeads / s.keyHeads;
  Reference r;
  r.result.assign(size_t(s.batch) * s.queryHeads * T * D, 0);
  r.queryGrad = r.result;
  r.logsumexp.assign(size_t(s.batch) * s.queryHeads * T, -INFINITY);
  r.keyGrad.assign(size_t(s.batch) * s.keyHeads * S * D, 0);
  r.valueGrad = r.keyGrad;
  std::vector<double> p(S), dp(S);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.queryHeads; ++h) {
      const int kh = h / group;
      for (int t = 0; t < T; ++t) {
        double max = -INFINITY;
        for (int j = 0; j < S; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d)
            dot += qAt(b, h, t, d) * kAt(b, kh, j, d);
          p[j] = sees(s, t, j) ? scale * dot : -INFINITY;
          max = std::max(max, p[j]);
        }
        if (max == -INFINITY)
          continue; // sees no key: result 0, log-sum-exp -inf, no gradient
        double sum = 0;
        for (int j = 0; j < S; ++j)
          sum += p[j] = std::exp(p[j] - max);
        const size_t row = (size_t(b) * s.queryHeads + h) * T + t;
        r.logsumexp[row] = max + std::log(sum);
        double delta = 0;
        for (int j = 0; j < S; ++j) {
          p[j] /= sum;
          dp[j] = 0;
          for (int d = 0; d < D; ++d) {
            r.result[row * D + d] += p[j] * v.get(b, kh, j, d);
            dp[j] += dout.get(b, h, t, d) * v.get(b, kh, j, d);
          }
        }
        for (int d = 0; d < D; ++d)
          delta += dout.get(b, h, t, d) * r.result[row * D + d];
        for (int j = 0; j < S; ++j) {
          const double ds = p[j] * (dp[j] - delta);
          const size_t keyRow = (size_t(b) * s.keyHeads + kh) * S + j;
          for (int d = 0; d < D; ++d) {
            r.queryGrad[row * D + d] += scale * ds * kAt(b, kh, j, d);
            r.keyGrad[keyRow * D + d] += scale * ds * qAt(b, h, t, d);
            r.valueGrad[keyRow * D + d] += p[j] * dout.get(b, h, t, d);
          }
        }
      }
    }
  return r;
}

/// ||actual - expected|| / ||expected|| over a tensor [b][h][row][d].
double relativeError(const HostTensor &actual, const std::vector<double> &expected, int batch) {
  double diff = 0, norm = 0;
  size_t i = 0;
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < actual.heads; ++h)
      for (int r = 0; r < actual.rows; ++r)
        for (int d = 0; d < actual.dim; ++d, ++i) {
          const double e = expected[i], a = actual.get(b, h, r, d);
          diff += (a - e) * (a - e);
          norm += e * e;
        }
  return std::sqrt(diff / norm);
}

using EntryPoint = void (*)(Params);
struct Kernels {
  EntryPoint forward, delta, keyValueGrads, queryGrads, keyValueGradsAddingQuery, queryGradsFromSum;
};
Kernels kernelsFor(int headDim) {
  if (headDim == 64)
    return {tg_flash_attention_forward_d64,
            tg_flash_attention_delta_d64,
            tg_flash_attention_key_value_grads_d64,
            tg_flash_attention_query_grads_d64,
            tg_flash_attention_key_value_grads_adding_query_d64,
            tg_flash_attention_query_grads_from_sum_d64};
  return {tg_flash_attention_forward_d128,
          tg_flash_attention_delta_d128,
          tg_flash_attention_key_value_grads_d128,
          tg_flash_attention_query_grads_d128,
          tg_flash_attention_key_value_grads_adding_query_d128,
          tg_flash_attention_query_grads_from_sum_d128};
}

/// Runs `kernel` over `rows` (queries, or keys for the key and value
/// gradients) of `planes` planes, as the CUDA backend launches it.
void run(EntryPoint kernel, tg::flash::Kernel kind, const Params &p, int rows, int planes,
         int headDim) {
  const int per = tg::flash::blockRows(kind);
  tg::simt::launch((rows + per - 1) / per, planes, tg::flash::kThreads,
                   tg::flash::sharedBytes(kind, headDim), [&] { kernel(p); });
}

/// How the operands lie: each in a buffer of its own (q and the gradients
/// head-major, the rest token-major), or as tgc folds GPT-2's layouts: q,
/// k and v slots of one fused projection, dq, dk and dv slots of its
/// gradient (queries and keys alike, so equal heads and lengths).
enum class Layout { Own, FusedProjection };

/// The backward's two schedules: dQ a kernel of its own, or added by the
/// key blocks to an f32 sum (Params::queryGradSum).
enum class Backward { QueryKernel, SummedQuery };

void check(const Shape &s, Layout layout = Layout::Own, Backward backward = Backward::QueryKernel) {
  std::mt19937 rng(1234 + s.queryLen * 7 + s.keyLen + s.headDim + s.window);
  const int D = s.headDim, B = s.batch, Hq = s.queryHeads, Hk = s.keyHeads;
  const double scale = 1.0 / std::sqrt(double(D));
  HostTensor q = randomTensor(rng, B, Hq, s.queryLen, D, false, 1.0);
  HostTensor k = randomTensor(rng, B, Hk, s.keyLen, D, true, 1.0);
  HostTensor v = randomTensor(rng, B, Hk, s.keyLen, D, true, 1.0);
  HostTensor dq = ownTensor(B, Hq, s.queryLen, D, false);
  HostTensor dk = ownTensor(B, Hk, s.keyLen, D, false), dv = ownTensor(B, Hk, s.keyLen, D, true);
  if (layout == Layout::FusedProjection) {
    ASSERT_TRUE(Hq == Hk && s.queryLen == s.keyLen);
    auto qkv = std::make_shared<std::vector<uint16_t>>(size_t(B) * s.queryLen * 3 * Hq * D);
    auto grads = std::make_shared<std::vector<uint16_t>>(qkv->size(), 0x7fc0); // NaN: unwritten
    fillRandom(rng, *qkv, 1.0);
    q = slotOf(qkv, 3, 0, Hq, s.queryLen, D);
    k = slotOf(qkv, 3, 1, Hq, s.queryLen, D);
    v = slotOf(qkv, 3, 2, Hq, s.queryLen, D);
    dq = slotOf(grads, 3, 0, Hq, s.queryLen, D);
    dk = slotOf(grads, 3, 1, Hq, s.queryLen, D);
    dv = slotOf(grads, 3, 2, Hq, s.queryLen, D);
  }
  HostTensor dout = randomTensor(rng, B, Hq, s.queryLen, D, true, 0.1);
  HostTensor out = ownTensor(B, Hq, s.queryLen, D, true);
  std::vector<float> lse(size_t(B) * s.queryHeads * s.queryLen, 7.f);
  std::vector<float> delta(lse.size(), 7.f);

  Params p{};
  p.query = q.device();
  p.key = k.device();
  p.value = v.device();
  p.result = out.device();
  p.resultGrad = dout.device();
  p.queryGrad = dq.device();
  p.keyGrad = dk.device();
  p.valueGrad = dv.device();
  p.logsumexp = reinterpret_cast<uint64_t>(lse.data());
  p.delta = reinterpret_cast<uint64_t>(delta.data());
  p.batch = B;
  p.queryHeads = s.queryHeads;
  p.keyHeads = s.keyHeads;
  p.queryLen = s.queryLen;
  p.keyLen = s.keyLen;
  p.causal = s.causal;
  p.window = s.window;
  p.scale = float(scale);
  const Rope rope{D, s.ropeTheta};
  std::vector<float> cosines, sines;
  if (s.ropeTheta > 0) {
    const int positions = std::max(s.queryLen, s.keyLen);
    cosines = rope.table(positions, std::cos);
    sines = rope.table(positions, std::sin);
    p.ropeCos = reinterpret_cast<uint64_t>(cosines.data());
    p.ropeSin = reinterpret_cast<uint64_t>(sines.data());
  }

  Kernels kernels = kernelsFor(D);
  using tg::flash::Kernel;
  run(kernels.forward, Kernel::Forward, p, s.queryLen, B * s.queryHeads, D);
  // NaN: the delta kernel must zero every row the key blocks add to.
  std::vector<float> queryGradSum(size_t(B) * s.queryHeads * s.queryLen * D, NAN);
  if (backward == Backward::SummedQuery)
    p.queryGradSum = reinterpret_cast<uint64_t>(queryGradSum.data());
  run(kernels.delta, Kernel::Delta, p, s.queryLen, B * s.queryHeads, D);
  if (backward == Backward::SummedQuery) {
    run(kernels.keyValueGradsAddingQuery, Kernel::KeyValueGradsAddingQuery, p, s.keyLen,
        B * s.keyHeads, D);
    run(kernels.queryGradsFromSum, Kernel::QueryGradsFromSum, p, s.queryLen, B * s.queryHeads, D);
  } else {
    run(kernels.keyValueGrads, Kernel::KeyValueGrads, p, s.keyLen, B * s.keyHeads, D);
    run(kernels.queryGrads, Kernel::QueryGrads, p, s.queryLen, B * s.queryHeads, D);
  }

  std::vector<double> qs = packed(q, B), ks = packed(k, B);
  if (s.ropeTheta > 0) {
    rope.rotate(qs, s.queryLen, false, true);
    rope.rotate(ks, s.keyLen, false, true);
  }
  Reference r = reference(s, scale, qs, ks, v, dout);
  if (s.ropeTheta > 0) {
    rope.rotate(r.queryGrad, s.queryLen, true, false);
    rope.rotate(r.keyGrad, s.keyLen, true, false);
  }
  EXPECT_LT(relativeError(out, r.result, B), 1e-2) << "result";
  EXPECT_LT(relativeError(dq, r.queryGrad, B), 1e-2) << "query gradient";
  EXPECT_LT(relativeError(dk, r.keyGrad, B), 1e-2) << "key gradient";
  EXPECT_LT(relativeError(dv, r.valueGrad, B), 1e-2) << "value gradient";
  double worst = 0;
  size_t emptyRows = 0;
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(r.logsumexp[i])) {
      ++emptyRows;
      EXPECT_TRUE(std::isinf(lse[i]) && lse[i] < 0) << "row " << i << " sees no key";
      continue;
    }
    worst = std::max(worst, std::abs(double(lse[i]) - r.logsumexp[i]));
  }
  EXPECT_LT(worst, 1e-4) << "log-sum-exp";
  // Rows that see no key are 0, not NaN (checked above through the norm).
  if (emptyRows) {
    for (int h = 0; h < s.queryHeads; ++h)
      for (int d = 0; d < D; ++d) {
        EXPECT_EQ(out.get(0, h, s.queryLen - 1, d), 0.0);
      }
  }
}

TEST(FlashAttentionKernel, CausalHeadDim64) { check({1, 2, 2, 128, 128, 64, true, 0}); }
TEST(FlashAttentionKernel, GroupedHeadsPartialTiles) { check({2, 4, 2, 96, 96, 64, true, 0}); }
TEST(FlashAttentionKernel, NotCausalMoreKeysHeadDim128) {
  check({1, 2, 1, 64, 160, 128, false, 0});
}
TEST(FlashAttentionKernel, CausalWindow) { check({1, 1, 1, 200, 200, 64, true, 50}); }
// A window of 127: the tile of keys 0-63 is whole for queries 64-127 and
// not for 128-191, which the tile-skipping rule must tell apart.
TEST(FlashAttentionKernel, WindowAtTileEdges) { check({1, 1, 1, 256, 256, 64, true, 127}); }
TEST(FlashAttentionKernel, RowsThatSeeNoKey) { check({1, 2, 1, 150, 40, 64, true, 30}); }
TEST(FlashAttentionKernel, CausalHeadDim128) { check({1, 1, 1, 130, 130, 128, true, 0}); }
// Head dim 64 without the causal rule: over more keys than queries (96: the
// last block's last two warps hold none); and a window alone, whose keys
// start later for each warp.
TEST(FlashAttentionKernel, NotCausalMoreKeysHeadDim64) { check({1, 2, 1, 96, 160, 64, false, 0}); }
TEST(FlashAttentionKernel, WindowNotCausal) { check({1, 1, 1, 200, 200, 64, false, 50}); }
// The rotary position embedding inside: causal grouped heads with partial
// tiles at head dim 64, non-causal over more keys than queries at 128
// (positions past the queries'), and a window in GPT-2's fused layouts.
TEST(FlashAttentionKernel, RopeGroupedHeads) { check({2, 4, 2, 96, 96, 64, true, 0, 1e4}); }
TEST(FlashAttentionKernel, RopeNotCausalMoreKeysHeadDim128) {
  check({1, 2, 1, 64, 160, 128, false, 0, 5e2});
}
TEST(FlashAttentionKernel, RopeWindowFusedProjection) {
  check({1, 2, 2, 200, 200, 64, true, 50, 1e4}, Layout::FusedProjection);
}
// The layouts exec-fuse-gemm-layouts gives GPT-2's attention: q, k, v read out
// of the fused projection, dq, dk, dv written into its gradient's slots.
TEST(FlashAttentionKernel, FusedProjectionLayouts) {
  check({2, 2, 2, 96, 96, 64, true, 0}, Layout::FusedProjection);
}

// The backward in one pass over the key blocks, dQ added to an f32 sum:
// grouped heads with partial tiles, head dim 128 over more keys (its tiles
// of 32 queries, each warp a half of dQ's columns), a window, the rotation
// inside, and GPT-2's fused layouts.
TEST(FlashAttentionKernel, SummedQueryGroupedHeadsPartialTiles) {
  check({2, 4, 2, 96, 96, 64, true, 0}, Layout::Own, Backward::SummedQuery);
}
TEST(FlashAttentionKernel, SummedQueryNotCausalMoreKeysHeadDim128) {
  check({1, 2, 1, 64, 160, 128, false, 0}, Layout::Own, Backward::SummedQuery);
}
TEST(FlashAttentionKernel, SummedQueryCausalHeadDim128) {
  check({1, 1, 1, 130, 130, 128, true, 0}, Layout::Own, Backward::SummedQuery);
}
TEST(FlashAttentionKernel, SummedQueryRowsThatSeeNoKey) {
  check({1, 2, 1, 150, 40, 64, true, 30}, Layout::Own, Backward::SummedQuery);
}
TEST(FlashAttentionKernel, SummedQueryRopeWindowFusedProjection) {
  check({1, 2, 2, 200, 200, 64, true, 50, 1e4}, Layout::FusedProjection, Backward::SummedQuery);
}
TEST(FlashAttentionKernel, SummedQueryRopeGroupedHeads) {
  check({2, 4, 2, 96, 96, 64, true, 0, 1e4}, Layout::Own, Backward::SummedQuery);
}

} // namespace
