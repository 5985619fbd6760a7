//===- BuildTrainStepPass.cpp - tg-build-train-step -----------------------===//

#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace mlir::tg {
#define GEN_PASS_DEF_TGBUILDTRAINSTEP
#include "tg/Passes/Passes.h.inc"
} // namespace mlir::tg

namespace {
struct BuildTrainStepPass
    : mlir::tg::impl::TgBuildTrainStepBase<BuildTrainStepPass> {
  using Base::Base;

  /// The options as a TrainStepOptions; an error names a bad option.
  FailureOr<TrainStepOptions> trainStepOptions() {
    TrainStepOptions o;
    o.batchSize = batchSize;
    o.seqLen = seqLen;
    o.microBatches = microBatches;
    o.dataParallel = dataParallel;
    o.zeroStage = zero;
    o.lr = lr;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weightDecay = weightDecay;
    if (gradClipNorm != 0.0)
      o.gradClipNorm = gradClipNorm;
    std::optional<LrSchedule> kind = parseLrSchedule(schedule);
    if (!kind) {
      getOperation().emitError()
          << "tg-build-train-step: option 'lr-schedule' must be constant or "
             "cosine, got '"
          << schedule << "'";
      return failure();
    }
    o.schedule = *kind;
    o.warmupSteps = warmupSteps;
    o.minLr = minLr;
    o.decaySteps = decaySteps;
    if (failed(verifyTrainStepOptions(
            o, [&] { return getOperation().emitError(); })))
      return failure();
    return o;
  }

  void runOnOperation() override {
    FailureOr<TrainStepOptions> options = trainStepOptions();
    if (failed(options))
      return signalPassFailure();
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError() << "tg-build-train-step: no function @" << function
                         << " (option 'function')";
      return signalPassFailure();
    }
    if (failed(buildTrainStep(forward, *options)))
      return signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass>
mlir::tg::createTgBuildTrainStepPass(const TrainStepOptions &options,
                                     StringRef function) {
  TgBuildTrainStepOptions o;
  o.function = function.str();
  o.batchSize = options.batchSize;
  o.seqLen = options.seqLen;
  o.microBatches = options.microBatches;
  o.dataParallel = options.dataParallel;
  o.zero = options.zeroStage;
  o.lr = options.lr;
  o.beta1 = options.beta1;
  o.beta2 = options.beta2;
  o.eps = options.eps;
  o.weightDecay = options.weightDecay;
  o.gradClipNorm = options.gradClipNorm.value_or(0.0);
  o.schedule = stringifyLrSchedule(options.schedule).str();
  o.warmupSteps = options.warmupSteps;
  o.minLr = options.minLr;
  o.decaySteps = options.decaySteps;
  return createTgBuildTrainStep(o);
}
