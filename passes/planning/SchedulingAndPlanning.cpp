// The passes that schedule an exec program and plan its arena, in the order
// they run: shared by tgc's lowering (compiler/pipeline) and the trial plans
// of exec-fuse-horizontal's large rows, which must plan as the lowering does.
#include "tg/Passes/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::tg {

void addSchedulingAndPlanningPasses(OpPassManager &pm, int64_t bucketBytes,
                                    bool weightGradientStream) {
  pm.addPass(createExecScheduleCollectives());
  pm.addPass(createExecBucketGradients({bucketBytes}));
  pm.addPass(createExecInsertTimepoints());
  if (weightGradientStream)
    pm.addPass(createExecStreamWeightGradients());
  pm.addPass(createExecPlanBuffers());
}

} // namespace mlir::tg
