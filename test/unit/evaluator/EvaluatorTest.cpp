// Hand-computed cases for every op family of the reference evaluator, and
// its error reporting.
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tgtest;

namespace {

/// Runs @f of `source` on `args` and returns its results (failing the test
/// when parsing or evaluation fails).
std::vector<Tensor> runF(const std::string &source, std::vector<Tensor> args,
                         Arithmetic arithmetic = Arithmetic::Float64) {
  Program program(source);
  EXPECT_TRUE(program.parsed()) << program.diagnostics();
  if (!program.parsed())
    return {};
  auto results = program.run("f", args, arithmetic);
  EXPECT_TRUE(succeeded(results)) << program.diagnostics();
  return succeeded(results) ? *results : std::vector<Tensor>{};
}

/// The single result of @f.
Tensor runOne(const std::string &source, std::vector<Tensor> args,
              Arithmetic arithmetic = Arithmetic::Float64) {
  std::vector<Tensor> results = runF(source, std::move(args), arithmetic);
  return results.empty() ? Tensor{} : results[0];
}

/// The diagnostics of a failing evaluation of @f.
std::string runError(const std::string &source, std::vector<Tensor> args) {
  Program program(source);
  EXPECT_TRUE(program.parsed()) << program.diagnostics();
  if (!program.parsed())
    return {};
  EXPECT_TRUE(failed(program.run("f", args)));
  return program.diagnostics();
}

/// Naive matmul of row-major [M, K] and [K, N].
std::vector<double> naiveMatmul(const double *a, const double *b, int64_t m,
                                int64_t k, int64_t n) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < k; ++kk)
        c[i * n + j] += a[i * k + kk] * b[kk * n + j];
  return c;
}

} // namespace

TEST(Evaluator, MatmulPlain) {
  Tensor out = runOne(R"(
    func.func @f(%a: tensor<2x3xf64>, %b: tensor<3x2xf64>) -> tensor<2x2xf64> {
      %0 = tg.matmul %a, %b : tensor<2x3xf64>, tensor<3x2xf64> -> tensor<2x2xf64>
      return %0 : tensor<2x2xf64>
    })",
                      {{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{3, 2}, {7, 8, 9, 10, 11, 12}}});
  expectTensorNear(out, {{2, 2}, {58, 64, 139, 154}});
}

TEST(Evaluator, MatmulTransposesAndBatch) {
  std::mt19937 rng(1);
  // lhs^T per batch is [3, 4] (stored [2, 4, 3]); rhs^T is [4, 5] (stored
  // [2, 5, 4]).
  Tensor a = randomTensor({2, 4, 3}, rng), b = randomTensor({2, 5, 4}, rng);
  Tensor out = runOne(R"(
    func.func @f(%a: tensor<2x4x3xf64>, %b: tensor<2x5x4xf64>) -> tensor<2x3x5xf64> {
      %0 = tg.matmul %a, %b {transpose_lhs = true, transpose_rhs = true} : tensor<2x4x3xf64>, tensor<2x5x4xf64> -> tensor<2x3x5xf64>
      return %0 : tensor<2x3x5xf64>
    })",
                      {a, b});
  Tensor expected{{2, 3, 5}, {}};
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<double> at(12), bt(20);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        at[j * 4 + i] = a.data[batch * 12 + i * 3 + j];
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 4; ++j)
        bt[j * 5 + i] = b.data[batch * 20 + i * 4 + j];
    std::vector<double> c = naiveMatmul(at.data(), bt.data(), 3, 4, 5);
    expected.data.insert(expected.data.end(), c.begin(), c.end());
  }
  expectTensorNear(out, expected);
}

TEST(Evaluator, MatmulSharedRhs) {
  std::mt19937 rng(2);
  Tensor a = randomTensor({2, 2, 3}, rng), b = randomTensor({3, 4}, rng);
  Tensor out = runOne(R"(
    func.func @f(%a: tensor<2x2x3xf64>, %b: tensor<3x4xf64>) -> tensor<2x2x4xf64> {
      %0 = tg.matmul %a, %b : tensor<2x2x3xf64>, tensor<3x4xf64> -> tensor<2x2x4xf64>
      return %0 : tensor<2x2x4xf64>
    })",
                      {a, b});
  Tensor expected{{2, 2, 4}, {}};
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<double> c = naiveMatmul(&a.data[batch * 6], b.data.data(), 2, 3, 4);
    expected.data.insert(expected.data.end(), c.begin(), c.end());
  }
  expectTensorNear(out, expected);
}

TEST(Evaluator, BroadcastingBinaryOps) {
  std::vector<Tensor> out = runF(R"(
    func.func @f(%a: tensor<2x1xf64>, %b: tensor<3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>) {
      %0 = tg.add %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %1 = tg.sub %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %2 = tg.mul %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %3 = tg.div %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %4 = tg.max %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %5 = tg.min %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      %6 = tg.pow %a, %b : tensor<2x1xf64>, tensor<3xf64> -> tensor<2x3xf64>
      return %0, %1, %2, %3, %4, %5, %6 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>
    })",
                                 {{{2, 1}, {2, 4}}, {{3}, {1, 2, 4}}});
  ASSERT_EQ(out.size(), 7u);
  expectTensorNear(out[0], {{2, 3}, {3, 4, 6, 5, 6, 8}});
  expectTensorNear(out[1], {{2, 3}, {1, 0, -2, 3, 2, 0}});
  expectTensorNear(out[2], {{2, 3}, {2, 4, 8, 4, 8, 16}});
  expectTensorNear(out[3], {{2, 3}, {2, 1, 0.5, 4, 2, 1}});
  expectTensorNear(out[4], {{2, 3}, {2, 2, 4, 4, 4, 4}});
  expectTensorNear(out[5], {{2, 3}, {1, 2, 2, 1, 2, 4}});
  expectTensorNear(out[6], {{2, 3}, {2, 4, 16, 4, 16, 256}});
}

TEST(Evaluator, UnaryOps) {
  std::vector<Tensor> out = runF(R"(
    func.func @f(%x: tensor<2xf64>) -> (tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) {
      %0 = tg.neg %x : tensor<2xf64>
      %1 = tg.exp %x : tensor<2xf64>
      %2 = tg.log %x : tensor<2xf64>
      %3 = tg.tanh %x : tensor<2xf64>
      %4 = tg.sqrt %x : tensor<2xf64>
      %5 = tg.rsqrt %x : tensor<2xf64>
      %6 = tg.cos %x : tensor<2xf64>
      %7 = tg.sin %x : tensor<2xf64>
      %8 = tg.silu %x : tensor<2xf64>
      %9 = tg.gelu %x none : tensor<2xf64>
      %10 = tg.gelu %x tanh : tensor<2xf64>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>
    })",
                                 {{{2}, {1, 4}}});
  ASSERT_EQ(out.size(), 11u);
  expectTensorNear(out[0], {{2}, {-1, -4}});
  expectTensorNear(out[1], {{2}, {std::exp(1.0), std::exp(4.0)}});
  expectTensorNear(out[2], {{2}, {0, std::log(4.0)}});
  expectTensorNear(out[3], {{2}, {std::tanh(1.0), std::tanh(4.0)}});
  expectTensorNear(out[4], {{2}, {1, 2}});
  expectTensorNear(out[5], {{2}, {1, 0.5}});
  expectTensorNear(out[6], {{2}, {std::cos(1.0), std::cos(4.0)}});
  expectTensorNear(out[7], {{2}, {std::sin(1.0), std::sin(4.0)}});
  // Reference values computed with Python's math module.
  expectTensorNear(out[8], {{2}, {0.7310585786300049, 3.928055160151634}});
  expectTensorNear(out[9], {{2}, {0.8413447460685429, 3.9998733150326675}});
  expectTensorNear(out[10], {{2}, {0.8411919906082768, 3.9999297540518075}});
}

TEST(Evaluator, Reductions) {
  std::vector<Tensor> out = runF(R"(
    func.func @f(%x: tensor<2x3xf64>) -> (tensor<1x3xf64>, tensor<2xf64>, tensor<f64>, tensor<2x1xf64>) {
      %0 = tg.reduce_sum %x [0] {keep_dims = true} : tensor<2x3xf64> -> tensor<1x3xf64>
      %1 = tg.reduce_mean %x [-1] : tensor<2x3xf64> -> tensor<2xf64>
      %2 = tg.reduce_max %x [0, 1] : tensor<2x3xf64> -> tensor<f64>
      %3 = tg.reduce_max %x [1] {keep_dims = true} : tensor<2x3xf64> -> tensor<2x1xf64>
      return %0, %1, %2, %3 : tensor<1x3xf64>, tensor<2xf64>, tensor<f64>, tensor<2x1xf64>
    })",
                                 {{{2, 3}, {1, 5, 3, 4, -2, 6}}});
  ASSERT_EQ(out.size(), 4u);
  expectTensorNear(out[0], {{1, 3}, {5, 3, 9}});
  expectTensorNear(out[1], {{2}, {3, 8.0 / 3}});
  expectTensorNear(out[2], {{}, {6}});
  expectTensorNear(out[3], {{2, 1}, {5, 6}});
}

// Long sums accumulate blockwise: 2^20 terms of 0.1 added one by one are
// 1.5e-11 off the exact 0.1 * 2^20 (a power of two times 0.1, exact in
// double), in blocks of 64 2.4e-13.
TEST(Evaluator, LongSumsAccumulateBlockwise) {
  constexpr int64_t n = int64_t(1) << 20;
  double exact = 0.1 * double(n);
  Tensor sum = runOne(R"(
    func.func @f(%x: tensor<1048576xf64>) -> tensor<f64> {
      %0 = tg.reduce_sum %x [0] : tensor<1048576xf64> -> tensor<f64>
      return %0 : tensor<f64>
    })",
                      {{{n}, std::vector<double>(n, 0.1)}});
  ASSERT_EQ(sum.data.size(), 1u);
  EXPECT_LT(std::abs(sum.data[0] - exact) / exact, 1e-12);
  Tensor product = runOne(R"(
    func.func @f(%a: tensor<1x1048576xf64>, %b: tensor<1048576x1xf64>) -> tensor<1x1xf64> {
      %0 = tg.matmul %a, %b : tensor<1x1048576xf64>, tensor<1048576x1xf64> -> tensor<1x1xf64>
      return %0 : tensor<1x1xf64>
    })",
                          {{{1, n}, std::vector<double>(n, 0.1)},
                           {{n, 1}, std::vector<double>(n, 1.0)}});
  ASSERT_EQ(product.data.size(), 1u);
  EXPECT_LT(std::abs(product.data[0] - exact) / exact, 1e-12);
}

TEST(Evaluator, LayoutOps) {
  std::vector<Tensor> out = runF(R"(
    func.func @f(%x: tensor<2x3xf64>, %y: tensor<2x1xf64>) -> (tensor<3x2xf64>, tensor<2x2x3xf64>, tensor<1x2xf64>, tensor<3x4xf64>, tensor<2x4xf64>, tensor<3x2xf64>) {
      %0 = tg.transpose %x [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64>
      %1 = tg.broadcast %x : tensor<2x3xf64> -> tensor<2x2x3xf64>
      %2 = tg.slice %x [[1, 1]] [[1, 2]] : tensor<2x3xf64> -> tensor<1x2xf64>
      %3 = tg.pad %x low [1, 0] high [0, 1] : tensor<2x3xf64> -> tensor<3x4xf64>
      %4 = tg.concat %x, %y {axis = -1 : i64} : (tensor<2x3xf64>, tensor<2x1xf64>) -> tensor<2x4xf64>
      %5 = tg.reshape %x : tensor<2x3xf64> -> tensor<3x2xf64>
      return %0, %1, %2, %3, %4, %5 : tensor<3x2xf64>, tensor<2x2x3xf64>, tensor<1x2xf64>, tensor<3x4xf64>, tensor<2x4xf64>, tensor<3x2xf64>
    })",
                                 {{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{2, 1}, {7, 8}}});
  ASSERT_EQ(out.size(), 6u);
  expectTensorNear(out[0], {{3, 2}, {1, 4, 2, 5, 3, 6}});
  expectTensorNear(out[1], {{2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}});
  expectTensorNear(out[2], {{1, 2}, {5, 6}});
  expectTensorNear(out[3], {{3, 4}, {0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0}});
  expectTensorNear(out[4], {{2, 4}, {1, 2, 3, 7, 4, 5, 6, 8}});
  expectTensorNear(out[5], {{3, 2}, {1, 2, 3, 4, 5, 6}});
}

TEST(Evaluator, TransposeRank3) {
  std::mt19937 rng(3);
  Tensor x = randomTensor({2, 3, 4}, rng);
  Tensor out = runOne(R"(
    func.func @f(%x: tensor<2x3x4xf64>) -> tensor<4x2x3xf64> {
      %0 = tg.transpose %x [2, 0, 1] : tensor<2x3x4xf64> -> tensor<4x2x3xf64>
      return %0 : tensor<4x2x3xf64>
    })",
                      {x});
  Tensor expected{{4, 2, 3}, std::vector<double>(24)};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        expected.data[(k * 2 + i) * 3 + j] = x.data[(i * 3 + j) * 4 + k];
  expectTensorNear(out, expected);
}

TEST(Evaluator, ConstantsAndCasts) {
  std::vector<Tensor> out = runF(R"(
    func.func @f(%i: tensor<2xi64>) -> (tensor<2x2xf32>, tensor<3xi32>, tensor<2xf32>, tensor<2xbf16>, tensor<2xi32>) {
      %0 = tg.constant dense<1.5> : tensor<2x2xf32>
      %1 = tg.constant dense<[1, -2, 3]> : tensor<3xi32>
      %2 = tg.cast %i : tensor<2xi64> -> tensor<2xf32>
      %3 = tg.constant dense<[0.25, -8.0]> : tensor<2xbf16>
      %4 = tg.cast %i : tensor<2xi64> -> tensor<2xi32>
      return %0, %1, %2, %3, %4 : tensor<2x2xf32>, tensor<3xi32>, tensor<2xf32>, tensor<2xbf16>, tensor<2xi32>
    })",
                                 {{{2}, {7, -3}}});
  ASSERT_EQ(out.size(), 5u);
  expectTensorNear(out[0], {{2, 2}, {1.5, 1.5, 1.5, 1.5}});
  expectTensorNear(out[1], {{3}, {1, -2, 3}});
  expectTensorNear(out[2], {{2}, {7, -3}});
  expectTensorNear(out[3], {{2}, {0.25, -8}});
  expectTensorNear(out[4], {{2}, {7, -3}});
}

TEST(Evaluator, DeclaredArithmeticRounds) {
  const char *source = R"(
    func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xbf16>, tensor<2xf64>) {
      %0 = tg.div %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      %1 = tg.cast %0 : tensor<2xf32> -> tensor<2xbf16>
      %2 = tg.cast %a : tensor<2xf32> -> tensor<2xf64>
      return %0, %1, %2 : tensor<2xf32>, tensor<2xbf16>, tensor<2xf64>
    })";
  std::vector<Tensor> args = {{{2}, {1, 1 + 1e-12}}, {{2}, {3, 1}}};
  std::vector<Tensor> exact = runF(source, args, Arithmetic::Float64);
  std::vector<Tensor> declared = runF(source, args, Arithmetic::Declared);
  ASSERT_EQ(exact.size(), 3u);
  ASSERT_EQ(declared.size(), 3u);
  EXPECT_EQ(exact[0].data[0], 1.0 / 3);
  EXPECT_EQ(exact[2].data[1], 1 + 1e-12);
  EXPECT_EQ(declared[0].data[0], static_cast<double>(1.0f / 3.0f));
  // bf16 has 8 significand bits: 1/3 = 0.0101010101... rounds to 0x3eab.
  EXPECT_EQ(declared[1].data[0], 0.333984375);
  EXPECT_EQ(declared[2].data[1], 1.0); // the f32 argument was rounded on entry
}

TEST(Evaluator, LayerNorm) {
  Tensor out = runOne(R"(
    func.func @f(%x: tensor<1x3xf64>, %w: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<1x3xf64> {
      %0 = tg.layer_norm %x, %w, %b {epsilon = 0.0 : f64} : tensor<1x3xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<1x3xf64>
      return %0 : tensor<1x3xf64>
    })",
                      {{{1, 3}, {1, 2, 3}}, {{3}, {2, 1, 1}}, {{3}, {0, 1, 0}}});
  // mean 2, biased variance 2/3.
  double r = 1 / std::sqrt(2.0 / 3);
  expectTensorNear(out, {{1, 3}, {-2 * r, 1, r}});
}

TEST(Evaluator, RmsNorm) {
  Tensor out = runOne(R"(
    func.func @f(%x: tensor<1x2xf64>, %w: tensor<2xf64>) -> tensor<1x2xf64> {
      %0 = tg.rms_norm %x, %w {epsilon = 1.0 : f64} : tensor<1x2xf64>, tensor<2xf64> -> tensor<1x2xf64>
      return %0 : tensor<1x2xf64>
    })",
                      {{{1, 2}, {3, 4}}, {{2}, {1, 2}}});
  // mean(x^2) = 12.5, + eps = 13.5.
  double r = 1 / std::sqrt(13.5);
  expectTensorNear(out, {{1, 2}, {3 * r, 8 * r}});
}

TEST(Evaluator, Softmax) {
  Tensor out = runOne(R"(
    func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
      %0 = tg.softmax %x : tensor<2x3xf64>
      return %0 : tensor<2x3xf64>
    })",
                      {{{2, 3},
                        {0, std::log(2.0), std::log(3.0), 1000, 1000, 1000}}});
  expectTensorNear(out, {{2, 3}, {1.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 3}});
}

TEST(Evaluator, AttentionCausalGroupedQuery) {
  const int64_t B = 2, Hq = 4, Hkv = 2, T = 3, D = 2;
  const double scale = 0.7;
  std::mt19937 rng(4);
  Tensor q = randomTensor({B, Hq, T, D}, rng), k = randomTensor({B, Hkv, T, D}, rng),
         v = randomTensor({B, Hkv, T, D}, rng);
  for (bool causal : {true, false}) {
    std::string source = R"(
    func.func @f(%q: tensor<2x4x3x2xf64>, %k: tensor<2x2x3x2xf64>, %v: tensor<2x2x3x2xf64>) -> tensor<2x4x3x2xf64> {
      %0 = tg.attention %q, %k, %v {scale = 0.7 : f64, causal = )" +
                         std::string(causal ? "true" : "false") + R"(} : tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64> -> tensor<2x4x3x2xf64>
      return %0 : tensor<2x4x3x2xf64>
    })";
    Tensor out = runOne(source, {q, k, v});
    // Naive: scores with -inf masking, softmax, weighted sum.
    Tensor expected{{B, Hq, T, D}, std::vector<double>(B * Hq * T * D, 0.0)};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t t = 0; t < T; ++t) {
          int64_t kvh = h / (Hq / Hkv);
          double scores[T], sum = 0;
          for (int64_t s = 0; s < T; ++s) {
            double dotqk = 0;
            for (int64_t d = 0; d < D; ++d)
              dotqk += q.data[((b * Hq + h) * T + t) * D + d] *
                       k.data[((b * Hkv + kvh) * T + s) * D + d];
            scores[s] = causal && s > t ? -INFINITY : scale * dotqk;
          }
          for (int64_t s = 0; s < T; ++s)
            sum += scores[s] = std::exp(scores[s]);
          for (int64_t s = 0; s < T; ++s)
            for (int64_t d = 0; d < D; ++d)
              expected.data[((b * Hq + h) * T + t) * D + d] +=
                  scores[s] / sum * v.data[((b * Hkv + kvh) * T + s) * D + d];
        }
    expectTensorNear(out, expected);
  }
}

TEST(Evaluator, Rope) {
  std::mt19937 rng(5);
  Tensor x = randomTensor({1, 2, 3, 4}, rng);
  std::vector<Tensor> out = runF(R"(
    func.func @f(%x: tensor<1x2x3x4xf64>) -> (tensor<1x2x3x4xf64>, tensor<1x2x3x4xf64>) {
      %0 = tg.rope %x {theta = 100.0 : f64} : tensor<1x2x3x4xf64>
      %1 = tg.rope %0 {theta = 100.0 : f64, inverse} : tensor<1x2x3x4xf64>
      return %0, %1 : tensor<1x2x3x4xf64>, tensor<1x2x3x4xf64>
    })",
                                 {x});
  ASSERT_EQ(out.size(), 2u);
  // D = 4: inv_freq = [1, 100^-0.5 = 0.1]; pairs (0, 2) and (1, 3).
  Tensor expected{x.shape, std::vector<double>(24)};
  const double invFreq[2] = {1.0, 0.1};
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 2; ++i) {
        const double *row = &x.data[(h * 3 + t) * 4];
        double c = std::cos(t * invFreq[i]), s = std::sin(t * invFreq[i]);
        expected.data[(h * 3 + t) * 4 + i] = row[i] * c - row[i + 2] * s;
        expected.data[(h * 3 + t) * 4 + i + 2] = row[i + 2] * c + row[i] * s;
      }
  expectTensorNear(out[0], expected);
  expectTensorNear(out[1], x); // the inverse undoes the rotation
}

TEST(Evaluator, CrossEntropy) {
  Tensor out = runOne(R"(
    func.func @f(%l: tensor<2x2xf64>, %t: tensor<2xi64>) -> tensor<f64> {
      %0 = tg.cross_entropy %l, %t : tensor<2x2xf64>, tensor<2xi64> -> tensor<f64>
      return %0 : tensor<f64>
    })",
                      {{{2, 2}, {0, 0, std::log(3.0), 0}}, {{2}, {0, 1}}});
  // Token 0: log 2. Token 1: logsumexp = log 4, target logit 0.
  expectTensorNear(out, {{}, {1.5 * std::log(2.0)}});
}

TEST(Evaluator, Embedding) {
  const char *source = R"(
    func.func @f(%table: tensor<3x2xf64>, %ids: tensor<2x2xi32>) -> (tensor<2x2x2xf64>, tensor<3x2xf64>) {
      %0 = tg.embedding %table[%ids] : tensor<3x2xf64>, tensor<2x2xi32> -> tensor<2x2x2xf64>
      %1 = tg.embedding_grad %ids, %0 : tensor<2x2xi32>, tensor<2x2x2xf64> -> tensor<3x2xf64>
      return %0, %1 : tensor<2x2x2xf64>, tensor<3x2xf64>
    })";
  Tensor table{{3, 2}, {1, 2, 3, 4, 5, 6}};
  std::vector<Tensor> out = runF(source, {table, {{2, 2}, {2, 0, 2, 2}}});
  ASSERT_EQ(out.size(), 2u);
  expectTensorNear(out[0], {{2, 2, 2}, {5, 6, 1, 2, 5, 6, 5, 6}});
  expectTensorNear(out[1], {{3, 2}, {1, 2, 0, 0, 15, 18}});

  std::string error = runError(source, {table, {{2, 2}, {0, 3, 1, 1}}});
  EXPECT_NE(error.find("index value 3"), std::string::npos) << error;
  EXPECT_NE(error.find("[0, 3)"), std::string::npos) << error;
}

TEST(Evaluator, ErrorsNameTheProblem) {
  const char *source = R"(
    func.func @f(%a: tensor<2xf64>, %b: tensor<2x3xf64>) -> tensor<2xf64> {
      return %a : tensor<2xf64>
    })";
  std::string count = runError(source, {{{2}, {1, 2}}});
  EXPECT_NE(count.find("expected 2 arguments, got 1"), std::string::npos) << count;
  std::string shape = runError(source, {{{2}, {1, 2}}, {{3, 2}, std::vector<double>(6)}});
  EXPECT_NE(shape.find("argument #1"), std::string::npos) << shape;
  EXPECT_NE(shape.find("expected shape [2, 3]"), std::string::npos) << shape;

  std::string unsupported = runError(R"(
    func.func @f(%a: tensor<2xf64>) -> tensor<2xf64> {
      %0 = "foo.bar"(%a) : (tensor<2xf64>) -> tensor<2xf64>
      return %0 : tensor<2xf64>
    })",
                                     {{{2}, {1, 2}}});
  EXPECT_NE(unsupported.find("'foo.bar' op is not supported"), std::string::npos)
      << unsupported;

  std::string target = runError(R"(
    func.func @f(%l: tensor<1x2xf64>, %t: tensor<1xi64>) -> tensor<f64> {
      %0 = tg.cross_entropy %l, %t : tensor<1x2xf64>, tensor<1xi64> -> tensor<f64>
      return %0 : tensor<f64>
    })",
                                {{{1, 2}, {0, 0}}, {{1}, {-1}}});
  EXPECT_NE(target.find("target value -1"), std::string::npos) << target;
}

// The evaluator runs one rank: an all-reduce over an axis of size 1, or in a
// module without a mesh, is the identity; over more ranks it is refused.
TEST(Evaluator, AllReduceOnOneRank) {
  std::vector<double> x = {1, -2, 3};
  for (const char *module : {"module {", "module attributes {tg.mesh_axes = "
                                         "[\"data\"], tg.mesh_shape = "
                                         "array<i64: 1>} {"}) {
    Tensor out = runOne(std::string(module) + R"(
      func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
        %0 = tg.all_reduce avg %a over "data" : tensor<3xf64>
        return %0 : tensor<3xf64>
      }
    })",
                        {{{3}, x}});
    EXPECT_EQ(out.data, x) << module;
  }
  std::string error = runError(R"(
    module attributes {tg.mesh_axes = ["data"], tg.mesh_shape = array<i64: 2>} {
      func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
        %0 = tg.all_reduce sum %a over "data" : tensor<3xf64>
        return %0 : tensor<3xf64>
      }
    })",
                               {{{3}, x}});
  EXPECT_NE(error.find("'tg.all_reduce' op runs over mesh axis 'data' of size "
                       "2, but the reference evaluator runs one rank"),
            std::string::npos)
      << error;
}
