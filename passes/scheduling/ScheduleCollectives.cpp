// exec-schedule-collectives: each collective moves up to just after the last
// command it depends on, and collectives over the data axis go to the
// communication stream, so a gradient's all-reduce starts as soon as the
// gradient exists and runs while the backward pass goes on.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/Passes/Passes.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECSCHEDULECOLLECTIVES
#include "tg/Passes/Passes.h.inc"

namespace {
bool isCollective(Operation *op) {
  return isa<exec::AllReduceOp, exec::ReduceScatterOp, exec::AllGatherOp,
             exec::SendOp, exec::RecvOp>(op);
}

/// The storage (resources, views resolved) a command reads and writes.
struct Footprint {
  SmallVector<Operation *, 4> reads, writes;

  bool touches(Operation *storage) const {
    return llvm::is_contained(reads, storage) ||
           llvm::is_contained(writes, storage);
  }
  /// Running the two commands in the other order could change a result:
  /// one writes storage the other reads or writes.
  bool conflictsWith(const Footprint &other) const {
    return llvm::any_of(writes,
                        [&](Operation *r) { return other.touches(r); }) ||
           llvm::any_of(other.writes, [&](Operation *r) { return touches(r); });
  }
};

Footprint footprintOf(Operation *command) {
  Footprint f;
  for (Value buffer : exec::getReadBuffers(command))
    f.reads.push_back(exec::getStorage(buffer));
  for (Value buffer : exec::getWrittenBuffers(command))
    f.writes.push_back(exec::getStorage(buffer));
  return f;
}

/// The resources and views that define `buffer`, transitively.
void collectDefinitions(Value buffer, llvm::SetVector<Operation *> &defs) {
  Operation *def = buffer.getDefiningOp();
  if (!def || !defs.insert(def))
    return;
  for (Value operand : def->getOperands())
    collectDefinitions(operand, defs);
}

class CollectiveScheduler {
public:
  CollectiveScheduler(exec::ProgramOp program, int64_t commStream)
      : program(program), commStream(commStream) {}

  LogicalResult run() {
    // The planner lets commands of one stream rely on their order; moving a
    // command or changing its stream after planning would break that.
    if (program.getArenaSize())
      return program.emitOpError(
          "is already planned: run exec-schedule-collectives before "
          "exec-plan-buffers");
    SmallVector<Operation *> collectives;
    for (Operation &op : program.getBlock())
      if (isCollective(&op))
        collectives.push_back(&op);
    for (Operation *collective : collectives) {
      hoist(collective);
      if (cast<StringAttr>(collective->getAttr("axis")).getValue() == kDataAxis)
        collective->setAttr(
            "stream",
            IntegerAttr::get(IntegerType::get(program.getContext(), 64),
                             commStream));
    }
    return success();
  }

private:
  const Footprint &footprint(Operation *command) {
    auto it = footprints.find(command);
    if (it == footprints.end())
      it = footprints.try_emplace(command, footprintOf(command)).first;
    return it->second;
  }

  /// Moves `collective` to just after the last earlier command it conflicts
  /// with or awaits (to the top when there is none), with the resources and
  /// views it uses that lay in between.
  void hoist(Operation *collective) {
    llvm::SetVector<Operation *> defs;
    for (Value operand : collective->getOperands())
      if (!isa<exec::TimepointType>(operand.getType()))
        collectDefinitions(operand, defs);
    llvm::SmallPtrSet<Operation *, 4> awaited;
    for (Value timepoint : exec::getAwaits(collective))
      awaited.insert(timepoint.getDefiningOp());
    const Footprint mine = footprint(collective);
    Operation *barrier = nullptr;
    SmallVector<Operation *> passedDefs; // latest first
    for (Operation *prev = collective->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      if (defs.contains(prev)) {
        passedDefs.push_back(prev);
        continue;
      }
      if (exec::isCommand(prev) &&
          (awaited.contains(prev) || footprint(prev).conflictsWith(mine))) {
        barrier = prev;
        break;
      }
    }
    if (barrier)
      collective->moveAfter(barrier);
    else
      collective->moveBefore(&program.getBlock().front());
    for (Operation *def : llvm::reverse(passedDefs))
      def->moveBefore(collective);
  }

  exec::ProgramOp program;
  int64_t commStream;
  DenseMap<Operation *, Footprint> footprints;
};

struct ScheduleCollectivesPass
    : impl::ExecScheduleCollectivesBase<ScheduleCollectivesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (commStream < 0) {
      getOperation().emitError() << "exec-schedule-collectives: option "
                                    "'comm-stream' must be >= 0, got "
                                 << commStream;
      return signalPassFailure();
    }
    if (failed(exec::forEachProgram(getOperation(), [&](exec::ProgramOp program) {
          return CollectiveScheduler(program, commStream).run();
        })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
