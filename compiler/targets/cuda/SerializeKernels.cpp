// tg-cuda-serialize-kernels: each kernel module compiled to PTX (a gpu.binary
// and the launches tg-cuda-map-kernels recorded) becomes an exec.binary.
#include "tg/Exec/IR/ExecDialect.h"
#include "tg/Exec/IR/ExecOps.h"
#include "tg/Passes/Passes.h"
#include "tg/Targets/CudaTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCUDASERIALIZEKERNELS
#include "tg/Passes/Passes.h.inc"

namespace cuda {
DictionaryAttr kernelAttr(OpBuilder &b, StringRef name, int64_t operands,
                          ArrayRef<Launch> launches) {
  SmallVector<Attribute> entries;
  for (const Launch &launch : launches)
    entries.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("symbol", b.getStringAttr(launch.symbol)),
         b.getNamedAttr("grid", b.getI64IntegerAttr(launch.grid)),
         b.getNamedAttr("block", b.getI64IntegerAttr(launch.block)),
         b.getNamedAttr("shared_bytes",
                        b.getI64IntegerAttr(launch.sharedBytes))}));
  return b.getDictionaryAttr(
      {b.getNamedAttr("name", b.getStringAttr(name)),
       b.getNamedAttr("operands", b.getI64IntegerAttr(operands)),
       b.getNamedAttr("launches", b.getArrayAttr(entries))});
}
} // namespace cuda

namespace {
int64_t intField(DictionaryAttr dict, StringRef name) {
  return cast<IntegerAttr>(dict.get(name)).getInt();
}

struct SerializeKernelsPass
    : impl::TgCudaSerializeKernelsBase<SerializeKernelsPass> {
  void runOnOperation() override {
    for (auto module :
         llvm::make_early_inc_range(getOperation().getOps<ModuleOp>()))
      if (module->hasAttr(cuda::kKernelsAttr) && failed(serialize(module)))
        return signalPassFailure();
  }

  LogicalResult serialize(ModuleOp module) {
    auto binaries = module.getOps<gpu::BinaryOp>();
    if (!llvm::hasSingleElement(binaries))
      return module.emitError("expected the kernels compiled to one "
                              "gpu.binary (run the CUDA kernel lowering first)");
    gpu::BinaryOp binary = *binaries.begin();
    auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
    if (object.getFormat() != gpu::CompilationTarget::Assembly)
      return binary.emitError("expected PTX assembly (format=isa)");
    auto target = cast<NVVM::NVVMTargetAttr>(object.getTarget());

    SmallVector<StringRef> kernels, launchSymbols;
    SmallVector<int64_t> operandCounts, launchCounts, grid, block, shared;
    for (auto entry : cast<ArrayAttr>(module->getAttr(cuda::kKernelsAttr))) {
      auto kernel = cast<DictionaryAttr>(entry);
      kernels.push_back(cast<StringAttr>(kernel.get("name")).getValue());
      operandCounts.push_back(intField(kernel, "operands"));
      auto launches = cast<ArrayAttr>(kernel.get("launches"));
      launchCounts.push_back(launches.size());
      for (auto launchEntry : launches) {
        auto launch = cast<DictionaryAttr>(launchEntry);
        launchSymbols.push_back(
            cast<StringAttr>(launch.get("symbol")).getValue());
        grid.push_back(intField(launch, "grid"));
        block.push_back(intField(launch, "block"));
        shared.push_back(intField(launch, "shared_bytes"));
      }
    }
    OpBuilder b(module);
    exec::BinaryOp::create(
        b, module.getLoc(), *module.getSymName(), exec::BinaryFormat::ptx,
        b.getStrArrayAttr(kernels), b.getStrArrayAttr(kernels),
        b.getDenseI64ArrayAttr(operandCounts), target.getChip(),
        object.getObject(), b.getDenseI64ArrayAttr(launchCounts),
        b.getStrArrayAttr(launchSymbols), b.getDenseI64ArrayAttr(grid),
        b.getDenseI64ArrayAttr(block), b.getDenseI64ArrayAttr(shared));
    module.erase();
    return success();
  }
};
} // namespace
} // namespace mlir::tg
