#ifndef TG_PASSES_PASSES_H
#define TG_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class OpPassManager;
namespace func {
class FuncOp;
}
namespace tg {

#define GEN_PASS_DECL
#include "tg/Passes/Passes.h.inc"

/// The exec program's schedule and arena plan, after fusion:
/// exec-schedule-collectives, exec-bucket-gradients (buckets of
/// `bucketBytes`), exec-insert-timepoints, exec-stream-weight-gradients
/// (with `weightGradientStream`), exec-plan-buffers. tgc's lowering runs
/// them, and exec-fuse-horizontal's large-rows trials too.
void addSchedulingAndPlanningPasses(OpPassManager &pm, int64_t bucketBytes,
                                    bool weightGradientStream);

/// Registers every TGC pass with the global registry (for tg-opt and for
/// textual pipelines).
#define GEN_PASS_REGISTRATION
#include "tg/Passes/Passes.h.inc"

} // namespace tg
} // namespace mlir

#endif
