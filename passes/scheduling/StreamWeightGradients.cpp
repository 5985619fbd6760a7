// exec-stream-weight-gradients: the GEMMs whose products only the optimizer
// reads (the weight gradients) run on a stream of their own, beside the
// backward pass, joined by the main stream one GEMM later.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/Passes/Passes.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECSTREAMWEIGHTGRADIENTS
#include "tg/Passes/Passes.h.inc"

namespace {
LogicalResult streamWeightGradients(exec::ProgramOp program, int64_t stream) {
  // The planner lets the commands of one stream rely on their order: a
  // command that changes streams after planning could race with a reuse.
  if (program.getArenaSize())
    return program.emitOpError(
        "is already planned: run exec-stream-weight-gradients before "
        "exec-plan-buffers");
  SmallVector<Operation *> commands;
  // The commands touching each storage, in order, with their bytes of it
  // (a pack's members are rows of one storage).
  DenseMap<Operation *, SmallVector<std::pair<int64_t, exec::ByteRange>>>
      touches;
  int64_t lastProduct = -1;
  for (Operation &op : program.getBlock()) {
    if (!exec::isCommand(&op))
      continue;
    int64_t position = commands.size();
    commands.push_back(&op);
    if (isa<exec::GemmOp, exec::AttentionOp>(op))
      lastProduct = position;
    for (Value buffer : llvm::concat<Value>(exec::getReadBuffers(&op),
                                            exec::getWrittenBuffers(&op)))
      touches[exec::getStorage(buffer)].push_back(
          {position, exec::getByteRange(buffer)});
  }
  // A GEMM on the main stream before the last product whose products
  // nothing touches again before it: nothing the backward pass computes
  // after the GEMM waits for it.
  auto readLate = [&](exec::GemmOp gemm, int64_t position) {
    return position < lastProduct &&
           llvm::all_of(exec::getWrittenBuffers(gemm), [&](Value buffer) {
             exec::ByteRange mine = exec::getByteRange(buffer);
             return llvm::none_of(touches.lookup(exec::getStorage(buffer)),
                                  [&](auto touch) {
                                    auto [at, bytes] = touch;
                                    return at > position && at <= lastProduct &&
                                           bytes.overlaps(mine);
                                  });
           });
  };
  SmallVector<std::pair<exec::GemmOp, int64_t>> side;
  for (auto [position, command] : llvm::enumerate(commands))
    if (auto gemm = dyn_cast<exec::GemmOp>(command);
        gemm && exec::getStream(gemm) == 0 && readLate(gemm, position))
      side.push_back({gemm, int64_t(position)});
  Builder b(program.getContext());
  for (auto [gemm, position] : side)
    gemm->setAttr("stream", b.getI64IntegerAttr(stream));
  // The main stream joins each one once the next is issued, the last once
  // the last product is: the planner frees what a GEMM on another stream
  // read only where a command awaits it.
  for (auto [i, entry] : llvm::enumerate(side)) {
    int64_t after = i + 1 < side.size() ? side[i + 1].second
                                        : std::max(entry.second, lastProduct);
    for (int64_t at = after + 1; at < int64_t(commands.size()); ++at)
      if (exec::getStream(commands[at]) == 0) {
        exec::addAwaits(commands[at], entry.first.getDone());
        break;
      }
  }
  return success();
}

struct StreamWeightGradientsPass
    : impl::ExecStreamWeightGradientsBase<StreamWeightGradientsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (stream < 2) {
      getOperation().emitError()
          << "exec-stream-weight-gradients: stream " << int64_t(stream)
          << " is the main or the communication stream; give 2 or more";
      return signalPassFailure();
    }
    if (failed(exec::forEachProgram(getOperation(), [&](exec::ProgramOp p) {
          return streamWeightGradients(p, stream);
        })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
