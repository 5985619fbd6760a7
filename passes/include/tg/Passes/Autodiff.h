#ifndef TG_PASSES_AUTODIFF_H
#define TG_PASSES_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

namespace mlir::tg {

/// Reverse-mode autodiff over the tg ops of one block. Emits, at the
/// builder's insertion point (after the ops computing `loss`), the gradient of
/// the scalar `loss` with respect to each value in `wrt` (zeros where the loss
/// does not depend on it). Every op between `wrt` and `loss` must implement
/// DifferentiableOpInterface; the first that does not is reported on its
/// location and the result is failure. Gradients are named `grad_<name>` after
/// the NameLoc of the value they belong to.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss,
                                             ValueRange wrt);

} // namespace mlir::tg

#endif
