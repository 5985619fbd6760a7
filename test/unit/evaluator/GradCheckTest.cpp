// Finite-difference checks of every *_grad op against its forward op. Each
// case is a module with @forward(args...) -> y and @backward(args..., dy) ->
// the gradients of sum(y * dy) for the arguments listed in `wrt`.
#include "TestUtil.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace tgtest;

namespace {

double dotProduct(const Tensor &a, const Tensor &b) {
  double sum = 0;
  for (size_t i = 0; i < a.data.size(); ++i)
    sum += a.data[i] * b.data[i];
  return sum;
}

/// Compares @backward with central differences (eps 1e-6) of
/// sum(@forward(args) * dy) for a random dy; the relative error of each
/// gradient (in the 2-norm) must stay below 1e-6.
void checkGradients(const std::string &source, std::vector<Tensor> args,
                    const std::vector<size_t> &wrt, unsigned seed = 0) {
  Program program(source);
  ASSERT_TRUE(program.parsed()) << program.diagnostics();
  auto forward = [&](const std::vector<Tensor> &inputs) {
    auto results = program.run("forward", inputs);
    EXPECT_TRUE(succeeded(results)) << program.diagnostics();
    return succeeded(results) ? (*results)[0] : Tensor{};
  };

  std::mt19937 rng(seed);
  Tensor dy = randomTensor(forward(args).shape, rng);
  std::vector<Tensor> backwardArgs = args;
  backwardArgs.push_back(dy);
  auto grads = program.run("backward", backwardArgs);
  ASSERT_TRUE(succeeded(grads)) << program.diagnostics();
  ASSERT_EQ(grads->size(), wrt.size());

  const double eps = 1e-6;
  for (size_t g = 0; g < wrt.size(); ++g) {
    Tensor &x = args[wrt[g]];
    const Tensor &analytic = (*grads)[g];
    ASSERT_EQ(analytic.shape, x.shape) << "gradient #" << g;
    double errorNorm = 0, norm = 0;
    for (size_t i = 0; i < x.data.size(); ++i) {
      double saved = x.data[i];
      x.data[i] = saved + eps;
      double plus = dotProduct(forward(args), dy);
      x.data[i] = saved - eps;
      double minus = dotProduct(forward(args), dy);
      x.data[i] = saved;
      double numeric = (plus - minus) / (2 * eps);
      errorNorm += std::pow(numeric - analytic.data[i], 2);
      norm += std::pow(analytic.data[i], 2);
    }
    ASSERT_GT(norm, 0) << "gradient #" << g << " is identically zero";
    EXPECT_LT(std::sqrt(errorNorm / norm), 1e-6) << "gradient #" << g;
  }
}

std::vector<Tensor> randoms(const std::vector<std::vector<int64_t>> &shapes,
                            unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> tensors;
  for (const auto &shape : shapes)
    tensors.push_back(randomTensor(shape, rng));
  return tensors;
}

/// @forward is GELU with `approximation`, @backward its gradient with
/// `gradApproximation` (the same one unless testing the checker itself).
std::string geluSource(const std::string &approximation,
                       std::string gradApproximation = "") {
  if (gradApproximation.empty())
    gradApproximation = approximation;
  return R"(
    func.func @forward(%x: tensor<3x4xf64>) -> tensor<3x4xf64> {
      %0 = tg.gelu %x )" + approximation + R"( : tensor<3x4xf64>
      return %0 : tensor<3x4xf64>
    }
    func.func @backward(%x: tensor<3x4xf64>, %dy: tensor<3x4xf64>) -> tensor<3x4xf64> {
      %0 = tg.gelu_grad %x, %dy )" + gradApproximation + R"( : tensor<3x4xf64>
      return %0 : tensor<3x4xf64>
    })";
}

} // namespace

TEST(GradCheck, DetectsAWrongGradient) {
  // The two GELU forms differ by about 1e-3: far above the tolerance.
  EXPECT_NONFATAL_FAILURE(
      checkGradients(geluSource("none", "tanh"), randoms({{3, 4}}, 1), {0}),
      "gradient #0");
}

TEST(GradCheck, GeluExact) {
  checkGradients(geluSource("none"), randoms({{3, 4}}, 1), {0});
}

TEST(GradCheck, GeluTanh) {
  std::mt19937 rng(2);
  checkGradients(geluSource("tanh"), {randomTensor({3, 4}, rng, -3, 3)}, {0});
}

TEST(GradCheck, Silu) {
  std::mt19937 rng(3);
  checkGradients(R"(
    func.func @forward(%x: tensor<3x4xf64>) -> tensor<3x4xf64> {
      %0 = tg.silu %x : tensor<3x4xf64>
      return %0 : tensor<3x4xf64>
    }
    func.func @backward(%x: tensor<3x4xf64>, %dy: tensor<3x4xf64>) -> tensor<3x4xf64> {
      %0 = tg.silu_grad %x, %dy : tensor<3x4xf64>
      return %0 : tensor<3x4xf64>
    })",
                 {randomTensor({3, 4}, rng, -4, 4)}, {0});
}

TEST(GradCheck, LayerNorm) {
  checkGradients(R"(
    func.func @forward(%x: tensor<2x3x5xf64>, %w: tensor<5xf64>, %b: tensor<5xf64>) -> tensor<2x3x5xf64> {
      %0 = tg.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f64} : tensor<2x3x5xf64>, tensor<5xf64>, tensor<5xf64> -> tensor<2x3x5xf64>
      return %0 : tensor<2x3x5xf64>
    }
    func.func @backward(%x: tensor<2x3x5xf64>, %w: tensor<5xf64>, %b: tensor<5xf64>, %dy: tensor<2x3x5xf64>) -> (tensor<2x3x5xf64>, tensor<5xf64>, tensor<5xf64>) {
      %0:3 = tg.layer_norm_grad %x, %w, %dy {epsilon = 1.0e-5 : f64} : tensor<2x3x5xf64>, tensor<5xf64>, tensor<2x3x5xf64> -> tensor<2x3x5xf64>, tensor<5xf64>, tensor<5xf64>
      return %0#0, %0#1, %0#2 : tensor<2x3x5xf64>, tensor<5xf64>, tensor<5xf64>
    })",
                 randoms({{2, 3, 5}, {5}, {5}}, 4), {0, 1, 2});
}

TEST(GradCheck, RmsNorm) {
  checkGradients(R"(
    func.func @forward(%x: tensor<3x6xf64>, %w: tensor<6xf64>) -> tensor<3x6xf64> {
      %0 = tg.rms_norm %x, %w {epsilon = 1.0e-6 : f64} : tensor<3x6xf64>, tensor<6xf64> -> tensor<3x6xf64>
      return %0 : tensor<3x6xf64>
    }
    func.func @backward(%x: tensor<3x6xf64>, %w: tensor<6xf64>, %dy: tensor<3x6xf64>) -> (tensor<3x6xf64>, tensor<6xf64>) {
      %0:2 = tg.rms_norm_grad %x, %w, %dy {epsilon = 1.0e-6 : f64} : tensor<3x6xf64>, tensor<6xf64>, tensor<3x6xf64> -> tensor<3x6xf64>, tensor<6xf64>
      return %0#0, %0#1 : tensor<3x6xf64>, tensor<6xf64>
    })",
                 randoms({{3, 6}, {6}}, 5), {0, 1});
}

TEST(GradCheck, Softmax) {
  checkGradients(R"(
    func.func @forward(%x: tensor<2x3x4xf64>) -> tensor<2x3x4xf64> {
      %0 = tg.softmax %x : tensor<2x3x4xf64>
      return %0 : tensor<2x3x4xf64>
    }
    func.func @backward(%x: tensor<2x3x4xf64>, %dy: tensor<2x3x4xf64>) -> tensor<2x3x4xf64> {
      %y = tg.softmax %x : tensor<2x3x4xf64>
      %0 = tg.softmax_grad %y, %dy : tensor<2x3x4xf64>
      return %0 : tensor<2x3x4xf64>
    })",
                 randoms({{2, 3, 4}}, 6), {0});
}

TEST(GradCheck, AttentionGroupedQuery) {
  for (const char *causal : {"true", "false"}) {
    std::string attrs =
        std::string("{scale = 0.6 : f64, causal = ") + causal + "}";
    checkGradients(R"(
    func.func @forward(%q: tensor<2x4x3x2xf64>, %k: tensor<2x2x3x2xf64>, %v: tensor<2x2x3x2xf64>) -> tensor<2x4x3x2xf64> {
      %0 = tg.attention %q, %k, %v )" + attrs + R"( : tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64> -> tensor<2x4x3x2xf64>
      return %0 : tensor<2x4x3x2xf64>
    }
    func.func @backward(%q: tensor<2x4x3x2xf64>, %k: tensor<2x2x3x2xf64>, %v: tensor<2x2x3x2xf64>, %dy: tensor<2x4x3x2xf64>) -> (tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64>) {
      %0:3 = tg.attention_grad %q, %k, %v, %dy )" + attrs + R"( : tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x4x3x2xf64> -> tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64>
      return %0#0, %0#1, %0#2 : tensor<2x4x3x2xf64>, tensor<2x2x3x2xf64>, tensor<2x2x3x2xf64>
    })",
                   randoms({{2, 4, 3, 2}, {2, 2, 3, 2}, {2, 2, 3, 2}}, 7),
                   {0, 1, 2});
  }
}

TEST(GradCheck, CrossEntropy) {
  std::vector<Tensor> args = randoms({{2, 3, 5}}, 8);
  args.push_back({{2, 3}, {0, 4, 2, 2, 1, 3}});
  checkGradients(R"(
    func.func @forward(%l: tensor<2x3x5xf64>, %t: tensor<2x3xi64>) -> tensor<f64> {
      %0 = tg.cross_entropy %l, %t : tensor<2x3x5xf64>, tensor<2x3xi64> -> tensor<f64>
      return %0 : tensor<f64>
    }
    func.func @backward(%l: tensor<2x3x5xf64>, %t: tensor<2x3xi64>, %dloss: tensor<f64>) -> tensor<2x3x5xf64> {
      %0 = tg.cross_entropy_grad %l, %t, %dloss : tensor<2x3x5xf64>, tensor<2x3xi64>, tensor<f64>
      return %0 : tensor<2x3x5xf64>
    })",
                 args, {0});
}

TEST(GradCheck, Embedding) {
  std::vector<Tensor> args = randoms({{4, 3}}, 9);
  args.push_back({{2, 3}, {1, 3, 1, 0, 3, 3}});
  checkGradients(R"(
    func.func @forward(%table: tensor<4x3xf64>, %ids: tensor<2x3xi64>) -> tensor<2x3x3xf64> {
      %0 = tg.embedding %table[%ids] : tensor<4x3xf64>, tensor<2x3xi64> -> tensor<2x3x3xf64>
      return %0 : tensor<2x3x3xf64>
    }
    func.func @backward(%table: tensor<4x3xf64>, %ids: tensor<2x3xi64>, %dy: tensor<2x3x3xf64>) -> tensor<4x3xf64> {
      %0 = tg.embedding_grad %ids, %dy : tensor<2x3xi64>, tensor<2x3x3xf64> -> tensor<4x3xf64>
      return %0 : tensor<4x3xf64>
    })",
                 args, {0});
}

TEST(GradCheck, RopeInverseIsTranspose) {
  checkGradients(R"(
    func.func @forward(%x: tensor<1x2x4x6xf64>) -> tensor<1x2x4x6xf64> {
      %0 = tg.rope %x {theta = 10000.0 : f64} : tensor<1x2x4x6xf64>
      return %0 : tensor<1x2x4x6xf64>
    }
    func.func @backward(%x: tensor<1x2x4x6xf64>, %dy: tensor<1x2x4x6xf64>) -> tensor<1x2x4x6xf64> {
      %0 = tg.rope %dy {theta = 10000.0 : f64, inverse} : tensor<1x2x4x6xf64>
      return %0 : tensor<1x2x4x6xf64>
    })",
                 randoms({{1, 2, 4, 6}}, 10), {0});
}
