#ifndef TG_PASSES_KERNELBODIES_H
#define TG_PASSES_KERNELBODIES_H

#include "mlir/IR/Builders.h"

namespace mlir::tg {

/// True if `op` computes each result element from the operand elements at the
/// same position only (elementwise, `operand` not broadcast), so its result
/// may be written over `operand`: ops declaring Tg_InPlaceElementwise in ODS
/// (TgInterfaces.td), `operand` having the result's type.
bool canRunInPlace(Operation *op, Value operand);

/// True if emitKernelBody knows `op`: the op declares Tg_HasKernelBody (or
/// Tg_Elementwise, which implies it) in ODS.
bool hasKernelBody(Operation *op);

/// Emits the loops computing tg op `op` at the builder's insertion point.
/// `operands` and `results` are static, identity-layout memrefs matching
/// op's operand and result tensor types; results are fully written. The body
/// uses linalg (elementwise, layout, reductions, matmul) and scf loops (norms,
/// softmax, losses, embeddings, RoPE), in the op's own element type.
LogicalResult emitKernelBody(OpBuilder &b, Operation *op, ValueRange operands,
                             ValueRange results);

} // namespace mlir::tg

#endif
