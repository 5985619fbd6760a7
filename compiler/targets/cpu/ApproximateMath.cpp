// tg-cpu-approximate-math: f32 exp, log, tanh and erf as polynomials (MLIR's,
// accurate to a few ulp) instead of libm calls, so LLVM can vectorize the
// loops around them: softmax and the cross-entropy over the vocabulary are
// dominated by exp.
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCPUAPPROXIMATEMATH
#include "tg/Passes/Passes.h.inc"

namespace {
struct ApproximateMathPass
    : impl::TgCpuApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained(
          {"math.exp", "math.log", "math.tanh", "math.erf"}, name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
