#ifndef TG_PASSES_FLOPCOUNT_H
#define TG_PASSES_FLOPCOUNT_H

#include <cstdint>

namespace mlir::func {
class FuncOp;
}

namespace mlir::tg {

/// Floating-point operations of the GEMM-like work in `func` (matmuls and
/// attention, forward and backward), counting a multiply-add as two. This is
/// the convention of model-FLOPs utilisation: elementwise work is left out.
int64_t countMatmulFlops(mlir::func::FuncOp func);

/// The model's FLOPs of `func`: its kModelFlopsAttr where a pass recorded
/// them before changing how the work is done, else countMatmulFlops.
int64_t modelFlops(mlir::func::FuncOp func);

} // namespace mlir::tg

#endif
