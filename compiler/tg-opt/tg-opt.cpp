// tg-opt: mlir-opt with TGC's dialects and passes, so that every stage of
// tgc's pipeline can be run (and lit-tested) on its own.
#include "tg/Exec/IR/ExecDialect.h"
#include "tg/IR/TgDialect.h"
#include "tg/Passes/Passes.h"
#include "tg/Targets/CudaTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tg::registerTgPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tg::TgDialect, mlir::tg::exec::ExecDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::linalg::LinalgDialect, mlir::scf::SCFDialect,
                  mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::LLVM::LLVMDialect>();
  mlir::tg::registerCudaTarget(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "TGC optimizer driver\n", registry));
}
