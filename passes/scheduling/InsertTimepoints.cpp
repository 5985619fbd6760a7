// exec-insert-timepoints: the dependency graph of a program's commands, from
// the resources they read and write, recorded as awaited timepoints.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/Passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECINSERTTIMEPOINTS
#include "tg/Passes/Passes.h.inc"

namespace {
/// Who touched a resource since it was last written.
struct Accesses {
  Value lastWrite;            // the writer's timepoint
  SmallVector<Value> readers; // timepoints of reads since then
};

void insertTimepoints(exec::ProgramOp program) {
  DenseMap<Operation *, Accesses> byResource;
  for (Operation &op : program.getBlock()) {
    if (!exec::isCommand(&op))
      continue;
    SmallVector<Value> deps;
    auto reads = exec::getReadBuffers(&op);
    auto writes = exec::getWrittenBuffers(&op);
    for (Value buffer : reads) // read after write
      if (Value w = byResource[exec::getStorage(buffer)].lastWrite)
        deps.push_back(w);
    for (Value buffer : writes) { // write after write, write after read
      Accesses &a = byResource[exec::getStorage(buffer)];
      if (a.lastWrite)
        deps.push_back(a.lastWrite);
      deps.append(a.readers);
    }
    Value done = op.getResult(0);
    llvm::erase(deps, done);
    exec::addAwaits(&op, deps);
    for (Value buffer : reads)
      byResource[exec::getStorage(buffer)].readers.push_back(done);
    for (Value buffer : writes) {
      Accesses &a = byResource[exec::getStorage(buffer)];
      a.lastWrite = done;
      a.readers.clear();
    }
  }
}

struct InsertTimepointsPass
    : impl::ExecInsertTimepointsBase<InsertTimepointsPass> {
  void runOnOperation() override {
    getOperation().walk(insertTimepoints);
  }
};
} // namespace
} // namespace mlir::tg
