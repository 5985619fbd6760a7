#include "tg/Passes/FlopCount.h"
#include "tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

/// 2 * (batch * M * N) * K for a matmul.
static int64_t matmulFlops(tg::MatmulOp op) {
  auto lhs = op.getLhs().getType().getShape();
  int64_t k = op.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2 * op.getResult().getType().getNumElements() * k;
}

/// One [T, D] x [D, S] product per query head: 2 * B * Hq * T * S * D.
static int64_t attentionGemmFlops(Value query, Value key) {
  auto q = cast<RankedTensorType>(query.getType()).getShape();
  int64_t s = cast<RankedTensorType>(key.getType()).getShape()[2];
  return 2 * q[0] * q[1] * q[2] * s * q[3];
}

int64_t mlir::tg::countMatmulFlops(func::FuncOp func) {
  int64_t flops = 0;
  func.walk([&](Operation *op) {
    flops += llvm::TypeSwitch<Operation *, int64_t>(op)
                 .Case([](MatmulOp m) { return matmulFlops(m); })
                 // Q K^T and P V.
                 .Case([](AttentionOp a) {
                   return 2 * attentionGemmFlops(a.getQuery(), a.getKey());
                 })
                 // Recomputed Q K^T, then dV, dP, dQ and dK.
                 .Case([](AttentionGradOp a) {
                   return 5 * attentionGemmFlops(a.getQuery(), a.getKey());
                 })
                 .Default([](Operation *) { return 0; });
  });
  return flops;
}
