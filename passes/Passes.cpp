#include "tg/Passes/Passes.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Autodiff.h"
#include "tg/Passes/Decompose.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::tg;

namespace {
func::FuncOp lookupFunction(ModuleOp module, StringRef name) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func)
    module.emitError() << "no function @" << name
                       << " to transform; set the pass option function=NAME";
  return func;
}

struct AutodiffPass : PassWrapper<AutodiffPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AutodiffPass)
  AutodiffPass() = default;
  AutodiffPass(const AutodiffPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "tg-autodiff"; }
  StringRef getDescription() const final {
    return "Add @F_grad: the loss of @F and the gradients of its parameters";
  }
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("The function to differentiate"),
                               llvm::cl::init("forward")};

  void runOnOperation() override {
    func::FuncOp forward = lookupFunction(getOperation(), function);
    if (!forward)
      return signalPassFailure();
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
      if (auto name = grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr)) {
        wrt.push_back(arg);
        resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            kOutputAttr, b.getStringAttr("grad:" + name.getValue()))));
      }
    b.setInsertionPoint(ret);
    Value loss = ret.getOperand(0);
    auto grads = buildGradients(b, loss, wrt);
    if (failed(grads))
      return signalPassFailure();
    SmallVector<Value> results = {loss};
    results.append(*grads);
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(b.getFunctionType(grad.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    grad.setAllResultAttrs(resultAttrs);
  }
};

struct BuildTrainStepPass
    : PassWrapper<BuildTrainStepPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildTrainStepPass)
  BuildTrainStepPass() = default;
  BuildTrainStepPass(const BuildTrainStepPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "tg-build-train-step"; }
  StringRef getDescription() const final {
    return "Replace the forward function by the whole training step";
  }
  Option<std::string> config{*this, "config",
                             llvm::cl::desc("The TRAIN.json to follow")};
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("The forward function"),
                               llvm::cl::init("forward")};

  void runOnOperation() override {
    auto train = frontend::parseTrainConfig(config);
    if (!train) {
      getOperation().emitError() << llvm::toString(train.takeError());
      return signalPassFailure();
    }
    func::FuncOp forward = lookupFunction(getOperation(), function);
    if (!forward || failed(buildTrainStep(forward, *train)))
      return signalPassFailure();
  }
};

struct DecomposeAttentionPass
    : PassWrapper<DecomposeAttentionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DecomposeAttentionPass)
  StringRef getArgument() const final { return "tg-decompose-attention"; }
  StringRef getDescription() const final {
    return "Rewrite tg.attention and tg.attention_grad into matmul, softmax "
           "and elementwise tg ops";
  }

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(decomposeAttention(func)))
        return signalPassFailure();
  }
};
} // namespace

void mlir::tg::registerTgPasses() {
  PassRegistration<AutodiffPass>();
  PassRegistration<BuildTrainStepPass>();
  PassRegistration<DecomposeAttentionPass>();
}
