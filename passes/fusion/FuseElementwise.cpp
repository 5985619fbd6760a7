// tg-fuse-elementwise: chains of elementwise dispatch regions (forward,
// backward, the AdamW update of a parameter) become one region, so one
// kernel makes one pass over the elements and keeps every intermediate in
// registers instead of a buffer written by one kernel and read by the next.
#include "RegionFusion.h"

#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEELEMENTWISE
#include "tg/Passes/Passes.h.inc"

namespace {

int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

struct FuseElementwisePass
    : impl::TgFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    if (getOperation().isExternal())
      return; // a declaration: nothing to transform
    Block &block = getOperation().getBody().front();
    SmallVector<exec::DispatchRegionOp> regions(
        block.getOps<exec::DispatchRegionOp>());
    for (exec::DispatchRegionOp region : regions)
      copyCastIntoReaders(region);
    regions.assign(block.getOps<exec::DispatchRegionOp>().begin(),
                   block.getOps<exec::DispatchRegionOp>().end());
    // In program order: a region absorbs its producers, which absorbed
    // theirs before, so a chain ends up whole in its last region.
    for (exec::DispatchRegionOp region : regions) {
      if (!elementwiseGroupShape(region.getBody().front()))
        continue;
      cloneSplatConstants(region);
      while (exec::DispatchRegionOp producer = nextProducer(region))
        region = absorb(region, producer);
    }
    // Constants that every reader now holds a copy of.
    for (auto constant : llvm::make_early_inc_range(block.getOps<ConstantOp>()))
      if (constant.use_empty())
        constant.erase();
  }

private:
  /// A region that only casts one tensor, read by several elementwise
  /// regions of its shape (a bf16 gradient cast to f32, which the gradient
  /// norm's squares and the AdamW update read), may not join any one of
  /// them, for the others would read its result before that kernel runs.
  /// Each reader gets a copy of it instead, which it absorbs: the cast is
  /// computed once per reader and its result never stored, where that
  /// moves fewer bytes (readers x input < input + output + readers x
  /// output).
  void copyCastIntoReaders(exec::DispatchRegionOp region) {
    Operation *castOp = soleOp(region);
    if (!castOp || !isa<CastOp>(castOp) || region->getNumResults() != 1)
      return;
    ArrayRef<int64_t> shape =
        cast<ShapedType>(castOp->getResultTypes()[0]).getShape();
    Block *block = region->getBlock();
    SmallVector<exec::DispatchRegionOp> readers;
    for (Operation *user : region->getUsers()) {
      auto reader = dyn_cast_or_null<exec::DispatchRegionOp>(
          block->findAncestorOpInBlock(*user));
      if (!reader)
        return; // read by a library call or returned
      std::optional<ArrayRef<int64_t>> space =
          elementwiseGroupShape(reader.getBody().front());
      if (!space || *space != shape)
        return;
      if (!llvm::is_contained(readers, reader))
        readers.push_back(reader);
    }
    int64_t count = readers.size();
    int64_t in = byteSize(castOp->getOperand(0)),
            out = byteSize(castOp->getResult(0));
    if (count < 2 || count * in >= in + out + count * out)
      return;
    if (remarks)
      castOp->emitRemark() << "copied into its " << count
                           << " readers' kernels: saves writing " << out
                           << " bytes and reading " << count * out
                           << ", for reading " << (count - 1) * in << " more";
    for (exec::DispatchRegionOp reader : readers) {
      OpBuilder b(reader);
      Operation *copy = b.clone(*region);
      region->getResult(0).replaceUsesWithIf(
          copy->getResult(0),
          [&](OpOperand &use) { return reader->isAncestor(use.getOwner()); });
    }
    region.erase();
  }

  /// The first producer region of `region` that it may absorb, reporting
  /// (with remarks) why the others are not.
  exec::DispatchRegionOp nextProducer(exec::DispatchRegionOp region) {
    Block &body = region.getBody().front();
    ArrayRef<int64_t> space = *elementwiseGroupShape(body);
    for (Operation &op : body.without_terminator())
      for (Value operand : op.getOperands()) {
        auto producer = operand.getDefiningOp<exec::DispatchRegionOp>();
        if (!producer || reported.contains({producer, &op}))
          continue;
        if (std::string why = refusal(producer, region, space); !why.empty()) {
          reported.insert({producer, &op});
          if (remarks)
            producerOf(cast<OpResult>(operand))->emitRemark()
                << "not fused into the kernel of '"
                << op.getName().getStringRef() << "': " << why;
          continue;
        }
        if (remarks)
          producerOf(cast<OpResult>(operand))->emitRemark()
              << "fused into the kernel of '" << op.getName().getStringRef()
              << "': saves writing and reading " << byteSize(operand)
              << " bytes";
        return producer;
      }
    return nullptr;
  }

  /// Why `producer` stays its own kernel, or "" if `region` may absorb it.
  std::string refusal(exec::DispatchRegionOp producer,
                      exec::DispatchRegionOp region, ArrayRef<int64_t> space) {
    std::optional<ArrayRef<int64_t>> shape =
        elementwiseGroupShape(producer.getBody().front());
    if (!shape)
      return "it is not elementwise";
    if (isGemmBiasAdd(producer))
      return "it is a bias add of a GEMM's product, left to "
             "exec-fuse-gemm-bias as the GEMM's epilogue";
    if (*shape != space) {
      int64_t ours = elementCount(*shape), theirs = elementCount(space);
      return llvm::formatv("it would be recomputed {0} times ({1} elements "
                           "broadcast to {2}), where its own kernel computes "
                           "each element once",
                           theirs / std::max<int64_t>(ours, 1), ours, theirs)
          .str();
    }
    if (std::string why = tooManyInputs(region, producer, maxInputs);
        !why.empty())
      return why;
    return readBeforeConsumer(producer, region);
  }

  /// (producer, consuming op) pairs already found not fusable; ops keep
  /// their identity when their region is merged into another.
  DenseSet<std::pair<Operation *, Operation *>> reported;
};

} // namespace
} // namespace mlir::tg
