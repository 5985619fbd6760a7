// tg-cpu-serialize-kernels: each kernel module in the LLVM dialect becomes an
// exec.binary holding a host shared object.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/Passes/Passes.h"
#include "tg/Targets/CpuTarget.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCPUSERIALIZEKERNELS
#include "tg/Passes/Passes.h.inc"

namespace {
struct SerializeKernelsPass
    : impl::TgCpuSerializeKernelsBase<SerializeKernelsPass> {
  void runOnOperation() override {
    // The runtime's CPU GEMMs are OpenBLAS sgemm/dgemm.
    auto bf16Gemm = getOperation().walk([](exec::GemmOp gemm) {
      Type element = gemm.getC().getType().getElementType();
      if (element.isF32() || element.isF64())
        return WalkResult::advance();
      gemm.emitOpError("is in ")
          << element << ", but the CPU target runs matrix products in f32 or "
          << "f64 only: compile with --dtype=f32 (or precision \"fp32\" in "
          << "TRAIN.json), or with --gemm=generated (slow)";
      return WalkResult::interrupt();
    });
    if (bf16Gemm.wasInterrupted())
      return signalPassFailure();
    for (auto module :
         llvm::make_early_inc_range(getOperation().getOps<ModuleOp>()))
      if (module.getSymName() && failed(serialize(module)))
        return signalPassFailure();
  }

  LogicalResult serialize(ModuleOp module) {
    std::vector<std::string> names;
    SmallVector<int64_t> operandCounts;
    for (auto kernel : module.getOps<LLVM::LLVMFuncOp>()) {
      // Declarations (libm, parallel launches) and internal functions (the
      // loop bodies tg-cpu-parallelize-loops outlined) are not kernels.
      if (kernel.isExternal() || kernel.getLinkage() != LLVM::Linkage::External)
        continue;
      names.push_back(kernel.getSymName().str());
      operandCounts.push_back(kernel.getNumArguments());
    }
    auto binary = serializeHostKernels(module, names);
    if (!binary)
      return module.emitError() << llvm::toString(binary.takeError());
    OpBuilder b(module);
    SmallVector<StringRef> kernels(names.begin(), names.end());
    SmallVector<StringRef> symbols(binary->symbols.begin(),
                                   binary->symbols.end());
    exec::BinaryOp::create(
        b, module.getLoc(), *module.getSymName(), exec::BinaryFormat::elf,
        b.getStrArrayAttr(kernels), b.getStrArrayAttr(symbols),
        b.getDenseI64ArrayAttr(operandCounts),
        b.getStringAttr(binary->cpu),
        b.getStringAttr(StringRef(
            reinterpret_cast<const char *>(binary->sharedObject.data()),
            binary->sharedObject.size())));
    module.erase();
    return success();
  }
};
} // namespace
} // namespace mlir::tg
