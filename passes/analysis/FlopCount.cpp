#include "tg/Passes/FlopCount.h"
#include "tg/Passes/Interface.h"
#include "tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

/// The sum of the FLOPs every op states through FlopCountOpInterface
/// (matmul, attention, attention_grad: see their getFlops()).
int64_t mlir::tg::countMatmulFlops(func::FuncOp func) {
  int64_t flops = 0;
  func.walk([&](FlopCountOpInterface op) { flops += op.getFlops(); });
  return flops;
}

int64_t mlir::tg::modelFlops(func::FuncOp func) {
  if (auto recorded = func->getAttrOfType<IntegerAttr>(kModelFlopsAttr))
    return recorded.getInt();
  return countMatmulFlops(func);
}
