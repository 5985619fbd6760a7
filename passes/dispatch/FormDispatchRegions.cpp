// tg-form-dispatch-regions: wraps each op that becomes generated code in an
// exec.dispatch_region on tensors, the unit a kernel is outlined from.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFORMDISPATCHREGIONS
#include "tg/Passes/Passes.h.inc"

namespace {
struct FormDispatchRegionsPass
    : impl::TgFormDispatchRegionsBase<FormDispatchRegionsPass> {
  using Base::Base;

  /// Views, constants, (by default) library GEMMs and (on request) the
  /// runtime's flash attention are not kernels.
  bool becomesKernel(Operation &op) const {
    if (!isa<TgDialect>(op.getDialect()) || !hasKernelBody(&op))
      return false;
    if (libraryAttention && isa<FlashAttentionOp, FlashAttentionGradOp>(op))
      return false;
    return !(libraryGemm && isa<MatmulOp>(op));
  }

  void runOnOperation() override {
    if (getOperation().isExternal())
      return; // a declaration: nothing to transform
    Block &body = getOperation().getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body)) {
      // Gradient markers have done their work (autodiff ran before).
      if (isa<GradAllReduceOp, StopGradientOp>(op)) {
        op.replaceAllUsesWith(op.getOperands());
        op.erase();
        continue;
      }
      if (!becomesKernel(op))
        continue;
      OpBuilder b(&op);
      auto region =
          exec::DispatchRegionOp::create(b, op.getLoc(), op.getResultTypes());
      op.replaceAllUsesWith(region.getResults());
      Block *inside = b.createBlock(&region.getBody());
      op.moveBefore(inside, inside->end());
      b.setInsertionPointToEnd(inside);
      exec::YieldOp::create(b, op.getLoc(), op.getResults());
    }
  }
};
} // namespace
} // namespace mlir::tg
