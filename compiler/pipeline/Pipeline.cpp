// tgc's pass pipeline as a few staged functions.
#include "tg/Pipeline/Pipeline.h"

#include "tg/Passes/Passes.h"
#include "tg/Targets/CpuTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tg {

void buildTrainingStage(OpPassManager &pm, const TrainStepOptions &options,
                        EvaluationFunctions functions) {
  if (options.tensorParallel > 1)
    pm.addPass(createTgPartitionTensorParallel(
        {"forward", options.tensorParallel, options.dataParallel,
         options.sequenceParallel}));
  if (functions.evalStep)
    pm.addPass(createTgBuildEvalStepPass(options, "forward"));
  if (functions.logits)
    pm.addPass(createTgBuildLogits({"forward"}));
  pm.addPass(createTgBuildTrainStepPass(options, "forward"));
}

void buildLoweringStage(OpPassManager &pm, const LoweringOptions &options) {
  if (options.fusion.computeCopies)
    pm.addPass(createTgCarryComputeCopies());
  pm.addPass(createTgUnrollMicroBatches());
  if (options.fusion.attention) {
    TgFuseAttentionOptions attention;
    attention.remarks = options.fusion.remarks;
    attention.flashKernels = options.flashKernels;
    attention.libraryKernels = options.libraryAttention;
    attention.cudnn = options.cudnnAttention;
    attention.maxScoreMib = options.fusion.maxScoreMib;
    attention.rope = options.fusion.attentionRope;
    pm.addNestedPass<func::FuncOp>(createTgFuseAttention(attention));
  }
  TgDecomposeAttentionOptions decompose;
  decompose.remarks = options.fusion.remarks;
  decompose.keepProbsFactor = options.keepProbsFactor;
  decompose.keepProbsMib = options.keepProbsMib;
  decompose.causalBlocks = options.causalBlocks;
  pm.addPass(createTgDecomposeAttention(decompose));
  if (options.alignGemmRows && options.libraryGemm) {
    TgAlignGemmRowsOptions align;
    align.remarks = options.fusion.remarks;
    pm.addNestedPass<func::FuncOp>(createTgAlignGemmRows(align));
  }
  pm.addNestedPass<func::FuncOp>(
      createTgFormDispatchRegions({options.libraryGemm, options.libraryAttention}));
  if (options.fusion.elementwise)
    pm.addNestedPass<func::FuncOp>(
        createTgFuseElementwise({options.fusion.remarks}));
  if (options.fusion.rows) {
    TgFuseIntoRowsOptions rows;
    rows.remarks = options.fusion.remarks;
    rows.lossWithGradient = options.fusion.loss;
    pm.addNestedPass<func::FuncOp>(createTgFuseIntoRows(rows));
  }
  if (options.fusion.attentionLayouts)
    pm.addNestedPass<func::FuncOp>(
        createTgFuseAttentionLayouts({options.fusion.remarks}));
  pm.addPass(createTgLowerToExec({/*functions=*/{}, options.seed}));
  if (options.fusion.gemmBias)
    pm.addPass(createExecFuseGemmBias({options.fusion.remarks}));
  if (options.fusion.gemmLayouts)
    pm.addPass(createExecFuseGemmLayouts({options.fusion.remarks}));
  if (options.fusion.gemmActivation)
    pm.addPass(createExecFuseGemmActivation({options.fusion.remarks,
                                             options.fusion.gemmActivationWide,
                                             options.fusion.gemmBiasGrad}));
  if (options.fusion.gemmResidual)
    pm.addPass(createExecFuseGemmResidual({options.fusion.remarks}));
  if (options.fusion.horizontal) {
    ExecFuseHorizontalOptions horizontal;
    horizontal.remarks = options.fusion.remarks;
    horizontal.mergeAllReduces = options.bucketBytes > 0;
    // Its large-rows trials plan as the passes that follow here.
    horizontal.largeRows = options.fusion.horizontalLargeRows;
    horizontal.bucketBytes = options.bucketBytes;
    horizontal.weightGradientStream = options.weightGradientStream;
    pm.addPass(createExecFuseHorizontal(horizontal));
  }
  addSchedulingAndPlanningPasses(pm, options.bucketBytes,
                                 options.weightGradientStream);
  pm.addPass(createTgBufferizeKernels({options.vectorRows}));
}

void buildCpuTargetStage(OpPassManager &pm) {
  addCpuKernelLoweringPasses(pm.nest<ModuleOp>());
  pm.addPass(createTgCpuSerializeKernels());
}

void buildCudaTargetStage(OpPassManager &pm, const CudaTargetOptions &options) {
  addCudaKernelLoweringPasses(pm.nest<ModuleOp>(), options);
  pm.addPass(createTgCudaSerializeKernels());
}

} // namespace mlir::tg
