// tg-fuse-attention-layouts: the slices, reshapes and transposes that only
// move flash attention's operands and results between layouts join its
// region, and its kernels read and write those layouts in place (a flash
// group, emitted by tg-bufferize-kernels). GPT-2's q, k and v are read where
// the fused projection wrote them, the result is written in the tokens'
// layout the output projection reads, dO read in it, and dq, dk and dv
// written into their slots of the projection's gradient: eleven kernels a
// layer fewer, each a pass over an activation written and read back.
#include "RegionFusion.h"

#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEATTENTIONLAYOUTS
#include "tg/Passes/Passes.h.inc"

namespace {

/// The op moving a value between layouts that `v` comes out of: the one
/// slice or transpose of the region yielding it, or a reshape (a view
/// outside any region); null otherwise.
Operation *viewProducing(Value v) {
  if (auto reshape = v.getDefiningOp<ReshapeOp>())
    return reshape;
  auto region = v.getDefiningOp<exec::DispatchRegionOp>();
  Operation *op = region ? soleOp(region) : nullptr;
  return isa_and_nonnull<SliceOp, TransposeOp>(op) ? op : nullptr;
}

/// What carries `view` in the function's block: its region, or itself.
Operation *carrier(Operation *view) {
  return isa<ReshapeOp>(view) ? view : view->getParentOp();
}

/// The views (from the root on) that made a flash operand, as what carries
/// them in the function's block (regions and reshapes, as the results'
/// chains), and the value they start from.
struct InputChain {
  unsigned operand;
  Value root;
  SmallVector<Operation *> carriers;

  /// Kernels that the views are (reshapes are not).
  int64_t kernels() const {
    return llvm::count_if(carriers, [](Operation *c) { return !isa<ReshapeOp>(c); });
  }
};

InputChain inputChain(Operation *flash, unsigned operand) {
  InputChain chain{operand, flash->getOperand(operand), {}};
  while (Operation *view = viewProducing(chain.root)) {
    chain.carriers.insert(chain.carriers.begin(), carrier(view));
    chain.root = view->getOperand(0);
  }
  return chain;
}

/// A flash op's operand, as a remark names it.
StringRef operandName(unsigned operand) {
  static const char *const names[] = {"q", "k", "v", "result", "logsumexp",
                                      "dO"};
  return names[operand];
}

class AttentionLayoutFuser {
public:
  explicit AttentionLayoutFuser(bool remarks) : remarks(remarks) {}

  void run(Block &block) {
    SmallVector<exec::DispatchRegionOp> flashRegions;
    for (auto region : block.getOps<exec::DispatchRegionOp>())
      if (isa_and_nonnull<FlashAttentionOp, FlashAttentionGradOp>(soleOp(region)))
        flashRegions.push_back(region);
    for (exec::DispatchRegionOp region : flashRegions)
      fuse(region);
    // The operands' views that no region reads any more.
    for (Operation *op : llvm::reverse(inputCarriers))
      if (op->use_empty())
        op->erase();
  }

private:
  /// The consumers of a flash result: the transpose regions and reshapes
  /// that each alone read the one before, up to the last transpose.
  SmallVector<Operation *> outputChain(Value result) {
    SmallVector<Operation *> chain;
    Value v = result;
    while (v.hasOneUse()) {
      Operation *user = *v.getUsers().begin();
      Operation *next = nullptr;
      if (isa<ReshapeOp>(user) && user->getBlock() == block)
        next = user;
      else if (auto region = dyn_cast<exec::DispatchRegionOp>(user->getParentOp());
               region && region->getBlock() == block &&
               isa_and_nonnull<TransposeOp>(soleOp(region)))
        next = region;
      if (!next)
        break;
      chain.push_back(next);
      v = next->getResult(0);
    }
    while (!chain.empty() && isa<ReshapeOp>(chain.back()))
      chain.pop_back();
    return chain;
  }

  /// The region of the one concatenation that alone reads every result of
  /// the flash region through reshapes after `chains`, or null.
  exec::DispatchRegionOp concatOf(exec::DispatchRegionOp flash,
                                  ArrayRef<SmallVector<Operation *>> chains,
                                  SmallVectorImpl<Operation *> &reshapes) {
    exec::DispatchRegionOp concat;
    SmallVector<Value> ends;
    for (auto [result, chain] : llvm::zip(flash->getResults(), chains)) {
      Value end = chain.empty() ? result : chain.back()->getResult(0);
      if (!end.hasOneUse())
        return nullptr;
      Operation *user = *end.getUsers().begin();
      if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        if (!reshape->hasOneUse())
          return nullptr;
        reshapes.push_back(reshape);
        end = reshape.getResult();
        user = *end.getUsers().begin();
      }
      auto region = dyn_cast<exec::DispatchRegionOp>(user->getParentOp());
      if (!region || !isa_and_nonnull<ConcatOp>(soleOp(region)) ||
          (concat && region != concat))
        return nullptr;
      concat = region;
      ends.push_back(end);
    }
    if (!concat || ends.size() != soleOp(concat)->getNumOperands() ||
        !llvm::equal(ends, soleOp(concat)->getOperands()))
      return nullptr;
    return concat;
  }

  void fuse(exec::DispatchRegionOp region) {
    Operation *flash = soleOp(region);
    block = region->getBlock();

    // Operands read through their views, where the root is no larger than
    // what the region reads of it together.
    SmallVector<InputChain> inputs;
    DenseMap<Value, int64_t> readOfRoot;
    for (unsigned i = 0; i < flash->getNumOperands(); ++i) {
      InputChain chain = inputChain(flash, i);
      if (chain.kernels() == 0)
        continue;
      readOfRoot[chain.root] += byteSize(flash->getOperand(i));
      inputs.push_back(std::move(chain));
    }
    llvm::erase_if(inputs, [&](const InputChain &chain) {
      if (byteSize(chain.root) <= readOfRoot[chain.root])
        return false;
      remark(flash) << operandName(chain.operand)
                    << " not read through its views: their root ("
                    << byteSize(chain.root) << " bytes) is larger than what "
                    << "the kernel reads of it (" << readOfRoot[chain.root]
                    << " bytes) and would be kept alive longer";
      return true;
    });

    // Results written through their views.
    SmallVector<SmallVector<Operation *>> outputs;
    for (Value result : region->getResults())
      outputs.push_back(outputChain(result));
    SmallVector<Operation *> reshapes;
    exec::DispatchRegionOp concat = concatOf(region, outputs, reshapes);
    SmallVector<Operation *> consumers; // in program order
    for (auto &chain : outputs)
      llvm::append_range(consumers, chain);
    if (concat) {
      llvm::append_range(consumers, reshapes);
      consumers.push_back(concat);
    }
    llvm::sort(consumers, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    if (inputs.empty() && consumers.empty())
      return;

    // The merged region takes the place of the flash region: what it
    // reads is there already (the consumers read only the chains), and
    // what it yields is read after the ops it replaces.
    SmallVector<Operation *> merged{region};
    llvm::append_range(merged, consumers);
    SmallVector<Value> yielded; // values of the ops merged, read outside
    for (Operation *op : merged)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers()) {
          Operation *reader = block->findAncestorOpInBlock(*user);
          if (llvm::is_contained(merged, reader))
            continue;
          if (!llvm::is_contained(yielded, result))
            yielded.push_back(result);
        }

    // Build it: the operands' views cloned (the forward and the gradient
    // read the same ones), the flash op and its consumers moved.
    OpBuilder b(region);
    auto fused = exec::DispatchRegionOp::create(b, region.getLoc(),
                                                ValueRange(yielded).getTypes());
    Block *body = b.createBlock(&fused.getBody());
    IRMapping map;
    auto cloneInto = [&](Operation *op) {
      Operation *inner = isa<ReshapeOp>(op) ? op : soleOp(cast<exec::DispatchRegionOp>(op));
      Operation *copy = b.clone(*inner, map);
      for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
        map.map(from, to);
    };
    for (const InputChain &chain : inputs)
      for (Operation *op : chain.carriers)
        cloneInto(op);
    cloneInto(region);
    for (Operation *op : consumers)
      cloneInto(op);
    SmallVector<Value> values;
    for (Value v : yielded)
      values.push_back(map.lookup(v));
    exec::YieldOp::create(b, region.getLoc(), values);
    if (!isFlashGroup(*body)) {
      remark(flash) << "layouts around it not fused: the flash kernels could "
                       "not read or write them in place (a view would leave "
                       "the head dim strided, or reshape elements that are "
                       "not contiguous)";
      fused.erase();
      return;
    }

    for (const InputChain &chain : inputs) {
      remark(flash) << operandName(chain.operand)
                    << " read in place through " << chain.carriers.size()
                    << " views of a " << byteSize(chain.root)
                    << "-byte value: " << chain.kernels()
                    << " layout kernel(s) fewer once nothing else reads them";
      inputCarriers.insert(chain.carriers.begin(), chain.carriers.end());
    }
    if (!consumers.empty()) {
      int64_t bytes = 0;
      for (Operation *op : consumers)
        if (!isa<ReshapeOp>(op))
          bytes += byteSize(op->getResult(0));
      remark(flash) << "results written in place through their views: "
                    << llvm::count_if(consumers, [](Operation *op) { return !isa<ReshapeOp>(op); })
                    << " layout kernel(s) fewer, " << bytes
                    << " bytes not written and read back";
    }
    for (auto [old, now] : llvm::zip(yielded, fused.getResults()))
      old.replaceAllUsesWith(now);
    for (Operation *op : llvm::reverse(consumers))
      op->erase();
    region.erase();
  }

  /// A remark at `op` when remarks are on; otherwise one nothing reports.
  InFlightDiagnostic remark(Operation *op) {
    if (remarks)
      return op->emitRemark();
    return InFlightDiagnostic();
  }

  bool remarks;
  Block *block = nullptr;
  llvm::SetVector<Operation *> inputCarriers; // in the order first read
};

struct FuseAttentionLayoutsPass
    : impl::TgFuseAttentionLayoutsBase<FuseAttentionLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (getOperation().isExternal())
      return; // a declaration: nothing to transform
    AttentionLayoutFuser(remarks).run(getOperation().getBody().front());
  }
};

} // namespace
} // namespace mlir::tg
