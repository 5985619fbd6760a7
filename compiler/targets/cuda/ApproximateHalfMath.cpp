// tg-cuda-approximate-half-math: 16-bit float exp, tanh and division through
// the fast f32 approximations (the pass description in Passes.td says why
// their error cannot show in a 16-bit result).
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCUDAAPPROXIMATEHALFMATH
#include "tg/Passes/Passes.h.inc"

namespace {

bool isHalfWidthFloat(Type type) {
  auto element = dyn_cast<FloatType>(getElementTypeOrSelf(type));
  return element && element.getWidth() == 16;
}

struct ApproximateHalfMathPass
    : impl::TgCudaApproximateHalfMathBase<ApproximateHalfMathPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (!isa<math::ExpOp, math::Exp2Op, math::TanhOp, arith::DivFOp>(op) ||
          !(isHalfWidthFloat(op->getResult(0).getType()) ||
            op->hasAttr(kForHalfFloatsAttr)))
        return;
      auto fastmath = cast<arith::ArithFastMathInterface>(op);
      arith::FastMathFlags flags = fastmath.getFastMathFlagsAttr().getValue();
      op->setAttr(fastmath.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), flags | arith::FastMathFlags::afn));
    });
  }
};

} // namespace
} // namespace mlir::tg
