// exec-bucket-gradients: consecutive in-place gradient all-reduces over the
// data axis share one buffer and one collective (a bucket), as PyTorch DDP
// and Megatron do, so a model of many small tensors pays a collective's
// latency once per bucket instead of once per tensor.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/Passes/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_EXECBUCKETGRADIENTS
#include "tg/Passes/Passes.h.inc"

namespace {
/// An all-reduce over "data" of all of a scratch resource (perhaps
/// through a reshaping view), in place: the gradient lives nowhere else, so
/// it can live in a bucket instead.
exec::ResourceOp bucketableGradient(Operation *op) {
  auto allReduce = dyn_cast<exec::AllReduceOp>(op);
  if (!allReduce || allReduce.getAxis() != kDataAxis ||
      allReduce.getSource() != allReduce.getTarget())
    return {};
  exec::ResourceOp resource = exec::getStorage(allReduce.getSource());
  if (!resource || resource.getKind() != exec::ResourceKind::scratch ||
      resource.getUpdates() || exec::getByteOffset(allReduce.getSource()) ||
      exec::getByteSize(allReduce.getSource().getType()) !=
          resource.getByteSize())
    return {};
  return resource;
}

class Bucketer {
public:
  Bucketer(exec::ProgramOp program, int64_t bucketBytes)
      : program(program), bucketBytes(bucketBytes) {}

  LogicalResult run() {
    // Buckets lay gradients out in a new resource: the planner places it.
    if (program.getArenaSize())
      return program.emitOpError(
          "is already planned: run exec-bucket-gradients before "
          "exec-plan-buffers");
    for (Operation &op : llvm::make_early_inc_range(program.getBlock())) {
      if (exec::ResourceOp gradient = bucketableGradient(&op)) {
        auto allReduce = cast<exec::AllReduceOp>(op);
        if (!members.empty() && !fits(allReduce, gradient))
          flush();
        members.push_back({allReduce, gradient});
        storages.insert(gradient);
        bytes += gradient.getByteSize();
        continue;
      }
      // A command that touches a member's gradient between the member's
      // all-reduce and the bucket's would see it unreduced: the bucket
      // closes before it.
      if (exec::isCommand(&op) && touchesMembers(&op))
        flush();
    }
    flush();
    return success();
  }

private:
  bool fits(exec::AllReduceOp allReduce, exec::ResourceOp gradient) {
    exec::AllReduceOp first = members.front().allReduce;
    return bytes + gradient.getByteSize() <= bucketBytes &&
           allReduce.getReduction() == first.getReduction() &&
           allReduce.getStream() == first.getStream() &&
           gradient.getType().getElementType() ==
               first.getSource().getType().getElementType();
  }

  bool touchesMembers(Operation *command) {
    auto isMember = [&](Value buffer) {
      return storages.contains(exec::getStorage(buffer));
    };
    return llvm::any_of(exec::getReadBuffers(command), isMember) ||
           llvm::any_of(exec::getWrittenBuffers(command), isMember);
  }

  /// Each gradient starts on a buffer boundary (exec::kBufferAlignment),
  /// as every arena buffer does.
  static int64_t aligned(int64_t elements, Type element) {
    int64_t perLine = std::max<int64_t>(
        1, exec::kBufferAlignment / exec::getElementByteSize(element));
    return (elements + perLine - 1) / perLine * perLine;
  }

  /// One buffer for the members' gradients (each a view at its offset) and
  /// one all-reduce where the last member's was.
  void flush() {
    if (members.size() > 1) {
      exec::AllReduceOp last = members.back().allReduce;
      Type element = last.getSource().getType().getElementType();
      int64_t elements = 0;
      for (Member member : members)
        elements = aligned(elements, element) +
                   member.gradient.getType().getNumElements();
      OpBuilder b(program.getContext());
      b.setInsertionPointToStart(&program.getBlock());
      Location at = NameLoc::get(b.getStringAttr("gradient_bucket"),
                                 last.getLoc());
      auto bucket = exec::ResourceOp::create(
          b, at, MemRefType::get({elements}, element),
          exec::ResourceKind::scratch, StringAttr(), Value(), Attribute(),
          ElementsAttr(), IntegerAttr(), Value(), IntegerAttr());
      int64_t offset = 0;
      SmallVector<Value> awaits;
      Value previous = bucket.getResult();
      for (Member member : members) {
        exec::ResourceOp gradient = member.gradient;
        offset = aligned(offset, element);
        // Right after the bucket and the views before: the op the builder
        // would otherwise insert before may be a gradient erased below (a
        // pack of gradients, exec-fuse-horizontal, is first in the block).
        b.setInsertionPointAfterValue(previous);
        auto view = exec::ViewOp::create(b, gradient.getLoc(),
                                         gradient.getType(), bucket,
                                         b.getI64IntegerAttr(offset));
        previous = view.getResult();
        offset += gradient.getType().getNumElements();
        llvm::append_range(awaits, exec::getAwaits(member.allReduce));
        gradient.replaceAllUsesWith(view.getResult());
        gradient.erase();
      }
      b.setInsertionPoint(last);
      auto allReduce = exec::AllReduceOp::create(
          b, at, last.getType(), bucket, bucket, last.getAxis(),
          last.getReduction(), ValueRange{}, last.getStream());
      exec::addAwaits(allReduce, awaits);
      for (Member member : members) {
        member.allReduce.replaceAllUsesWith(allReduce.getResult());
        member.allReduce.erase();
      }
    }
    members.clear();
    storages.clear();
    bytes = 0;
  }

  exec::ProgramOp program;
  int64_t bucketBytes;
  /// A gradient's all-reduce and the resource it lives in.
  struct Member {
    exec::AllReduceOp allReduce;
    exec::ResourceOp gradient;
  };
  SmallVector<Member> members;
  llvm::SmallPtrSet<Operation *, 8> storages;
  int64_t bytes = 0;
};

struct BucketGradientsPass
    : impl::ExecBucketGradientsBase<BucketGradientsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (bucketBytes < 0) {
      getOperation().emitError() << "exec-bucket-gradients: option "
                                    "'bucket-bytes' must be >= 0, got "
                                 << int64_t(bucketBytes);
      return signalPassFailure();
    }
    if (failed(exec::forEachProgram(getOperation(), [&](exec::ProgramOp program) {
          return Bucketer(program, bucketBytes).run();
        })))
      signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
