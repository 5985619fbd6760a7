// Checks that tg-decompose-attention does not change what a function
// computes: tg.attention and tg.attention_grad are evaluated by the reference
// evaluator in float64 before and after decomposeAttention, on fresh random
// inputs, for MHA, GQA and MQA head layouts, causal or not, T == S or not.
#include "tg/Evaluator/Evaluator.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Decompose.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "../support/ParsedModule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using mlir::tg::eval::Arithmetic;
using mlir::tg::eval::Tensor;

namespace {

struct Case {
  std::string name;
  int64_t batch, heads, kvHeads, queryLen, keyLen, headDim;
  bool causal;
  /// Causal query blocks (tg-decompose-attention's causal-blocks, with no
  /// minimum block size), and the sliding window.
  int64_t blocks = 1, window = 0;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

std::string tensorType(const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + "f64>";
}

std::vector<int64_t> queryShape(const Case &c) {
  return {c.batch, c.heads, c.queryLen, c.headDim};
}
std::vector<int64_t> keyShape(const Case &c) {
  return {c.batch, c.kvHeads, c.keyLen, c.headDim};
}

/// @attn(q, k, v) -> attention and @grad(q, k, v, dO) -> attention_grad.
std::string buildSource(const Case &c, bool causal) {
  std::string q = tensorType(queryShape(c)), kv = tensorType(keyShape(c));
  // 1/sqrt(D) is not exactly representable for most D: the scale constant of
  // the decomposition must carry it at full precision.
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.17e", 1.0 / std::sqrt(double(c.headDim)));
  std::string attrs = std::string("{scale = ") + scale +
                      " : f64, causal = " + (causal ? "true" : "false") +
                      (causal && c.window > 0
                           ? ", window = " + std::to_string(c.window) + " : i64"
                           : std::string()) +
                      "}";
  std::string src;
  src += "func.func @attn(%q: " + q + ", %k: " + kv + ", %v: " + kv + ") -> " +
         q + " {\n";
  src += "  %0 = tg.attention %q, %k, %v " + attrs + " : " + q + ", " + kv +
         ", " + kv + " -> " + q + " loc(\"attn\")\n";
  src += "  return %0 : " + q + "\n}\n";
  src += "func.func @grad(%q: " + q + ", %k: " + kv + ", %v: " + kv +
         ", %dout: " + q + ") -> (" + q + ", " + kv + ", " + kv + ") {\n";
  src += "  %0:3 = tg.attention_grad %q, %k, %v, %dout " + attrs + " : " + q +
         ", " + kv + ", " + kv + ", " + q + " -> " + q + ", " + kv + ", " +
         kv + " loc(\"attn_grad\")\n";
  src += "  return %0#0, %0#1, %0#2 : " + q + ", " + kv + ", " + kv + "\n}\n";
  return src;
}

/// A parsed module whose diagnostics are collected rather than printed.
struct Module : tgtest::ParsedModule {
  using ParsedModule::ParsedModule;

  std::vector<Tensor> evaluate(llvm::StringRef name,
                               const std::vector<Tensor> &args) {
    auto results =
        mlir::tg::eval::evaluate(func(name), args, Arithmetic::Float64);
    EXPECT_TRUE(mlir::succeeded(results)) << diagnostics;
    return mlir::succeeded(results) ? *results : std::vector<Tensor>{};
  }

  /// Decomposes every function (in `blocks` causal query blocks) and checks
  /// that no attention op is left and that the blocks were made.
  void decompose(int64_t blocks = 1) {
    mlir::tg::DecomposeAttentionOptions options;
    options.causalBlocks = blocks;
    options.minBlockQueries = 1;
    for (auto f : module->getOps<mlir::func::FuncOp>())
      ASSERT_TRUE(mlir::succeeded(mlir::tg::decomposeAttention(f, options)))
          << diagnostics;
    ASSERT_TRUE(mlir::succeeded(mlir::verify(*module))) << diagnostics;
    int64_t left = 0, softmaxes = 0;
    module->walk([&](mlir::Operation *op) {
      left += llvm::isa<mlir::tg::AttentionOp, mlir::tg::AttentionGradOp>(op);
      softmaxes += llvm::isa<mlir::tg::SoftmaxOp>(op);
    });
    EXPECT_EQ(left, 0);
    // One per block in @attn, and again in @grad (which recomputes P).
    EXPECT_EQ(softmaxes, 2 * blocks);
  }
};

Tensor random(const std::vector<int64_t> &shape, std::mt19937 &rng) {
  Tensor t{shape, {}};
  // Values up to 2 with scale 1/sqrt(D) give scores of order 1: softmax
  // rows are far from uniform and far from one-hot.
  std::uniform_real_distribution<double> dist(-2, 2);
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    t.data.push_back(dist(rng));
  return t;
}

/// ||a - b|| / ||b|| (shapes must match).
double relativeError(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  if (a.data.size() != b.data.size())
    return INFINITY;
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    diff += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
    ref += b.data[i] * b.data[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(ref), 1e-300);
}

// Both sides compute the same float64 arithmetic: the same products, the same
// softmax (masked keys contribute exp(-inf) = 0 exactly and do not move the
// row max), and only the order of some sums (the GEMM contractions and the dV
// and dK accumulation over query heads) may differ. That is a few ulps
// (~1e-16) times a small growth factor for these sizes, so 1e-12 leaves wide
// margin, while any real mistake (wrong head mapping, transpose, scale or
// mask) gives errors of order 1e-2 or more.
constexpr double kTolerance = 1e-12;

class DecomposeAttention : public ::testing::TestWithParam<Case> {};

TEST_P(DecomposeAttention, ForwardMatchesReference) {
  const Case &c = GetParam();
  std::mt19937 rng(std::hash<std::string>{}(c.name));
  std::vector<Tensor> args = {random(queryShape(c), rng),
                              random(keyShape(c), rng),
                              random(keyShape(c), rng)};

  Module reference(buildSource(c, c.causal));
  ASSERT_TRUE(reference.module) << reference.diagnostics;
  std::vector<Tensor> expected = reference.evaluate("attn", args);

  Module decomposed(buildSource(c, c.causal));
  ASSERT_TRUE(decomposed.module) << decomposed.diagnostics;
  decomposed.decompose(c.blocks);
  std::vector<Tensor> actual = decomposed.evaluate("attn", args);
  ASSERT_EQ(actual.size(), 1u);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_LT(relativeError(actual[0], expected[0]), kTolerance);

  // The check is sensitive to the mask: with more than one key, causal and
  // full attention differ by far more than the tolerance.
  if (c.keyLen > 1) {
    Module other(buildSource(c, !c.causal));
    ASSERT_TRUE(other.module) << other.diagnostics;
    std::vector<Tensor> unmasked = other.evaluate("attn", args);
    ASSERT_EQ(unmasked.size(), 1u);
    EXPECT_GT(relativeError(actual[0], unmasked[0]), 1e-3);
  }
}

TEST_P(DecomposeAttention, GradientMatchesReference) {
  const Case &c = GetParam();
  std::mt19937 rng(std::hash<std::string>{}(c.name + "_grad"));
  std::vector<Tensor> args = {
      random(queryShape(c), rng), random(keyShape(c), rng),
      random(keyShape(c), rng), random(queryShape(c), rng)};

  Module reference(buildSource(c, c.causal));
  ASSERT_TRUE(reference.module) << reference.diagnostics;
  std::vector<Tensor> expected = reference.evaluate("grad", args);

  Module decomposed(buildSource(c, c.causal));
  ASSERT_TRUE(decomposed.module) << decomposed.diagnostics;
  decomposed.decompose(c.blocks);
  std::vector<Tensor> actual = decomposed.evaluate("grad", args);
  ASSERT_EQ(actual.size(), 3u);
  ASSERT_EQ(expected.size(), 3u);
  const char *names[] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; ++i)
    EXPECT_LT(relativeError(actual[i], expected[i]), kTolerance) << names[i];

  if (c.keyLen > 1) {
    Module other(buildSource(c, !c.causal));
    ASSERT_TRUE(other.module) << other.diagnostics;
    std::vector<Tensor> unmasked = other.evaluate("grad", args);
    ASSERT_EQ(unmasked.size(), 3u);
    for (int i = 0; i < 3; ++i)
      EXPECT_GT(relativeError(actual[i], unmasked[i]), 1e-3) << names[i];
  }
}

// {name, B, Hq, Hkv, T, S, D, causal}
INSTANTIATE_TEST_SUITE_P(
    Shapes, DecomposeAttention,
    ::testing::Values(
        Case{"mha_causal", 2, 2, 2, 4, 4, 8, true},
        Case{"mha_full", 2, 2, 2, 4, 4, 8, false},
        Case{"gqa_causal_odd", 1, 4, 2, 5, 5, 3, true},
        Case{"gqa_full_t_ne_s", 2, 4, 2, 5, 7, 3, false},
        Case{"mqa_causal", 1, 3, 1, 6, 6, 4, true},
        Case{"mqa_full_t_ne_s", 1, 4, 1, 2, 5, 5, false},
        Case{"gqa_causal_t_lt_s", 1, 4, 2, 3, 5, 4, true},
        Case{"mha_causal_t_gt_s", 1, 2, 2, 5, 3, 2, true},
        Case{"causal_single_key", 1, 2, 1, 3, 1, 3, true},
        Case{"causal_single_query", 2, 6, 3, 1, 1, 7, true},
        // Causal query blocks, each over the keys it sees: even and uneven
        // blocks, one query a block, T < S and T > S, grouped heads, and a
        // window (whose later blocks start past key 0: padded gradients).
        Case{"mha_causal_2_blocks", 2, 2, 2, 4, 4, 8, true, 2},
        Case{"gqa_causal_odd_3_blocks", 1, 4, 2, 5, 5, 3, true, 3},
        Case{"mqa_causal_6_blocks", 1, 3, 1, 6, 6, 4, true, 6},
        Case{"gqa_causal_t_lt_s_2_blocks", 1, 4, 2, 3, 5, 4, true, 2},
        Case{"mha_causal_t_gt_s_2_blocks", 1, 2, 2, 5, 3, 2, true, 2},
        Case{"gqa_window_3_blocks", 1, 4, 2, 6, 6, 4, true, 3, 2},
        Case{"mha_window_2", 1, 2, 2, 6, 6, 4, true, 1, 2}),
    [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

} // namespace
