//===- BuildEvalFunctionsPasses.cpp - tg-build-eval-step, tg-build-logits -===//

#include "tg/Passes/Passes.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace mlir::tg {
#define GEN_PASS_DEF_TGBUILDEVALSTEP
#define GEN_PASS_DEF_TGBUILDLOGITS
#include "tg/Passes/Passes.h.inc"
} // namespace mlir::tg

namespace {
/// The forward function a pass's `function` option names, or an error.
func::FuncOp lookupForward(ModuleOp module, StringRef pass,
                           StringRef function) {
  auto forward = module.lookupSymbol<func::FuncOp>(function);
  if (!forward)
    module.emitError() << pass << ": no function @" << function
                       << " (option 'function')";
  return forward;
}

struct BuildEvalStepPass
    : mlir::tg::impl::TgBuildEvalStepBase<BuildEvalStepPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp forward =
        lookupForward(getOperation(), getArgument(), function);
    TrainStepOptions o;
    o.batchSize = batchSize;
    o.seqLen = seqLen;
    o.microBatches = microBatches;
    o.dataParallel = dataParallel;
    if (!forward || failed(buildEvalStep(forward, o)))
      signalPassFailure();
  }
};

struct BuildLogitsPass : mlir::tg::impl::TgBuildLogitsBase<BuildLogitsPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp forward =
        lookupForward(getOperation(), getArgument(), function);
    if (!forward || failed(buildLogits(forward)))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::tg::createTgBuildEvalStepPass(const TrainStepOptions &options,
                                    StringRef function) {
  TgBuildEvalStepOptions o;
  o.function = function.str();
  o.batchSize = options.batchSize;
  o.seqLen = options.seqLen;
  o.microBatches = options.microBatches;
  o.dataParallel = options.dataParallel;
  return createTgBuildEvalStep(o);
}
