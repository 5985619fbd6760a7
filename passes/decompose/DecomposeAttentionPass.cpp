// tg-decompose-attention on every function of a module.
#include "tg/Passes/Decompose.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGDECOMPOSEATTENTION
#include "tg/Passes/Passes.h.inc"

namespace {
struct DecomposeAttentionPass
    : impl::TgDecomposeAttentionBase<DecomposeAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(decomposeAttention(func, {keepProbsFactor, keepProbsMib, remarks,
                                            causalBlocks, minBlockQueries})))
        return signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
