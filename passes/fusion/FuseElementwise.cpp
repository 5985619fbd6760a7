// tg-fuse-elementwise: chains of elementwise dispatch regions (forward,
// backward, the AdamW update of a parameter) become one region, so one
// kernel makes one pass over the elements and keeps every intermediate in
// registers instead of a buffer written by one kernel and read by the next.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEELEMENTWISE
#include "tg/Passes/Passes.h.inc"

namespace {

int64_t byteSize(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getNumElements() *
         int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A region that is exactly a bias add of a library GEMM's product: left
/// alone, so that exec-fuse-gemm-bias makes it the GEMM's epilogue (no pass
/// over the product at all on the CPU, cuBLASLt's epilogue on CUDA).
bool isGemmBiasAdd(exec::DispatchRegionOp region) {
  Block &body = region.getBody().front();
  if (body.getOperations().size() != 2)
    return false;
  auto add = dyn_cast<AddOp>(body.front());
  if (!add)
    return false;
  for (auto [product, bias] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())})
    if (product.getDefiningOp<MatmulOp>() &&
        cast<ShapedType>(bias.getType()).getRank() == 1)
      return true;
  return false;
}

/// The op computing `result` of a dispatch region, which a remark about
/// fusing it points at.
Operation *producerOf(OpResult result) {
  auto region = cast<exec::DispatchRegionOp>(result.getOwner());
  Value yielded = region.getBody().front().getTerminator()->getOperand(
      result.getResultNumber());
  Operation *op = yielded.getDefiningOp();
  return op ? op : region;
}

struct FuseElementwisePass
    : impl::TgFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    Block &block = getOperation().getBody().front();
    SmallVector<exec::DispatchRegionOp> regions(
        block.getOps<exec::DispatchRegionOp>());
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
  /// Rank-0 splat constants (AdamW's betas, a mean's 1/n) become part of
  /// the kernel, compiled in, instead of buffers it reads.
  /// Each value once: constants already inside (from an absorbed region)
  /// are reused.
  void cloneSplatConstants(exec::DispatchRegionOp region) {
    Block &body = region.getBody().front();
    DenseMap<Attribute, Value> inside;
    for (auto constant : llvm::make_early_inc_range(body.getOps<ConstantOp>()))
      if (auto [it, added] =
              inside.try_emplace(constant.getValue(), constant.getResult());
          !added) {
        constant.replaceAllUsesWith(it->second);
        constant.erase();
      }
    OpBuilder b(&body, body.begin());
    for (Operation &op : body)
      for (OpOperand &operand : op.getOpOperands()) {
        auto constant = operand.get().getDefiningOp<ConstantOp>();
        if (!constant || constant->getBlock() == &body)
          continue;
        auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!value || !value.isSplat() ||
            cast<ShapedType>(value.getType()).getRank() != 0)
          continue;
        Value &copy = inside[value];
        if (!copy)
          copy = b.clone(*constant)->getResult(0);
        operand.set(copy);
      }
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
    Block *block = region->getBlock();
    if (int64_t inputs = mergedInputCount(region, producer);
        inputs > maxInputs)
      return llvm::formatv("the kernel would read {0} buffers, more than "
                           "max-inputs ({1}): a GPU kernel's parameters are "
                           "limited",
                           inputs, maxInputs)
          .str();
    for (Operation *user : producer->getUsers()) {
      // The user itself, or the region holding it.
      Operation *reader = block->findAncestorOpInBlock(*user);
      if (reader != region && reader->isBeforeInBlock(region))
        return llvm::formatv("'{0}' reads it before that kernel runs",
                             user->getName().getStringRef())
            .str();
    }
    return "";
  }

  /// The buffers the kernel of `region` and `producer` merged would read:
  /// what either uses from outside, but for the producer's own results and
  /// the splat constants compiled in.
  static int64_t mergedInputCount(exec::DispatchRegionOp region,
                                  exec::DispatchRegionOp producer) {
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(region.getBody(), used);
    getUsedValuesDefinedAbove(producer.getBody(), used);
    return llvm::count_if(used, [&](Value v) {
      return v.getDefiningOp() != producer.getOperation() &&
             !v.getDefiningOp<ConstantOp>();
    });
  }

  /// Moves `producer`'s ops into `region`, whose results become what both
  /// yielded and something outside still reads. Returns the new region.
  exec::DispatchRegionOp absorb(exec::DispatchRegionOp region,
                                exec::DispatchRegionOp producer) {
    Block &body = region.getBody().front();
    Block &from = producer.getBody().front();
    auto producerYield = cast<exec::YieldOp>(from.getTerminator());
    SmallVector<Value> yielded(
        cast<exec::YieldOp>(body.getTerminator()).getValues());
    SmallVector<Value> kept; // producer results read outside `region`
    for (auto [result, value] :
         llvm::zip(producer.getResults(), producerYield.getValues())) {
      result.replaceUsesWithIf(value, [&](OpOperand &use) {
        return region->isAncestor(use.getOwner());
      });
      if (!result.use_empty()) {
        kept.push_back(result);
        yielded.push_back(value);
      }
    }
    body.getOperations().splice(body.begin(), from.getOperations(),
                                from.begin(), std::prev(from.end()));
    cloneSplatConstants(region);

    OpBuilder b(region);
    auto merged = exec::DispatchRegionOp::create(
        b, region.getLoc(), ValueRange(yielded).getTypes());
    merged.getBody().takeBody(region.getBody());
    Block &mergedBody = merged.getBody().front();
    mergedBody.getTerminator()->erase();
    b.setInsertionPointToEnd(&mergedBody);
    exec::YieldOp::create(b, region.getLoc(), yielded);
    unsigned ownResults = region.getNumResults();
    region.replaceAllUsesWith(merged.getResults().take_front(ownResults));
    for (auto [old, now] :
         llvm::zip(kept, merged.getResults().drop_front(ownResults)))
      old.replaceAllUsesWith(now);
    region.erase();
    producer.erase();
    return merged;
  }

  /// (producer, consuming op) pairs already found not fusable; ops keep
  /// their identity when their region is merged into another.
  DenseSet<std::pair<Operation *, Operation *>> reported;
};

} // namespace
} // namespace mlir::tg
