#ifndef TG_PASSES_PASSES_H
#define TG_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace func {
class FuncOp;
}
namespace tg {

#define GEN_PASS_DECL
#include "tg/Passes/Passes.h.inc"

/// Registers every TGC pass with the global registry (for tg-opt and for
/// textual pipelines).
#define GEN_PASS_REGISTRATION
#include "tg/Passes/Passes.h.inc"

} // namespace tg
} // namespace mlir

#endif
