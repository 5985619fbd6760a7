// tg-autodiff: adds @F_grad returning the loss of @F and the gradient of
// every parameter, for testing the reverse sweep on its own.
#include "tg/IR/TgOps.h"
#include "tg/Passes/Autodiff.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGAUTODIFF
#include "tg/Passes/Passes.h.inc"

namespace {
struct AutodiffPass : impl::TgAutodiffBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      getOperation().emitError() << "no function @" << function
                                 << " to transform; set the pass option "
                                    "function=NAME";
      return signalPassFailure();
    }
    if (forward.isExternal()) {
      forward.emitError() << "@" << function
                          << " has no body to differentiate";
      return signalPassFailure();
    }
    // The loss is the first result, a float tensor (its gradient seed is
    // ones of its shape).
    ArrayRef<Type> forwardResults = forward.getFunctionType().getResults();
    auto lossType =
        forwardResults.empty() ? nullptr
                               : dyn_cast<RankedTensorType>(forwardResults[0]);
    if (!lossType || !isa<FloatType>(lossType.getElementType())) {
      InFlightDiagnostic error =
          forward.emitError() << "@" << function
                              << " must return its loss first, as a float "
                                 "tensor (tensor<f32>); ";
      if (forwardResults.empty())
        error << "it returns nothing";
      else
        error << "its first result is " << forwardResults[0];
      return signalPassFailure();
    }
    auto grad = cast<func::FuncOp>(forward->clone());
    grad.setSymName(function + "_grad");
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    b.insert(grad);

    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    SmallVector<Value> wrt;
    SmallVector<Attribute> resultAttrs = {b.getDictionaryAttr(
        b.getNamedAttr(kOutputAttr, b.getStringAttr("loss")))};
    for (BlockArgument arg : grad.getArguments())
      if (auto name = grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                         kParamAttr)) {
        wrt.push_back(arg);
        resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            kOutputAttr, b.getStringAttr("grad:" + name.getValue()))));
      }
    b.setInsertionPoint(ret);
    auto grads = buildGradients(b, ret.getOperand(0), wrt);
    if (failed(grads))
      return signalPassFailure();
    SmallVector<Value> results = {ret.getOperand(0)};
    results.append(*grads);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(b.getFunctionType(grad.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    grad.setAllResultAttrs(resultAttrs);
  }
};
} // namespace
} // namespace mlir::tg
