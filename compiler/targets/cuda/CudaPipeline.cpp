#include "tg/Passes/Passes.h"
#include "tg/Targets/CudaTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir::tg {

void registerCudaTarget(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, vector::VectorDialect>();
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
}

void addCudaKernelLoweringPasses(OpPassManager &pm,
                                 const CudaTargetOptions &options) {
  pm.addPass(createTgCudaMapKernels(
      {options.smCount, options.rowRegisters, options.f32PartialTerms,
       options.columnShare, options.lastBlockCombines,
       options.columnSumsInRowPass}));
  if (options.approximateHalfMath)
    pm.addNestedPass<gpu::GPUModuleOp>(createTgCudaApproximateHalfMath());
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = "isa"; // PTX text: the driver JITs it for the device
  nvvm.optLevel = 3;
  nvvm.kernelUseBarePtrCallConv = true; // static shapes: one pointer a buffer
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

} // namespace mlir::tg
