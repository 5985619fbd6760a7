// tg-opt: mlir-opt with the tg dialect and TGC's passes, for the lit suite.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "tg/IR/TgDialect.h"
#include "tg/Passes/Passes.h"

int main(int argc, char **argv) {
  mlir::tg::registerTgPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tg::TgDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "TGC optimizer driver\n", registry));
}
