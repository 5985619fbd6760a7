// The generic reverse sweep: which ops to differentiate, in which order, and
// how gradients of values used more than once are accumulated. Per-op math
// lives with the ops (DifferentiableOpInterface in dialects/tg).
#include "tg/Passes/Autodiff.h"
#include "tg/IR/ValueNames.h"
#include "tg/IR/TgOps.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tg;

static Location gradLoc(Location base, StringRef name) {
  return derivedLoc(base, name, "grad_");
}

static Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(tensor, b.getFloatAttr(tensor.getElementType(), 0.0)));
}

/// The sum `root`, a tree of adds, as a concatenation where its leaves are
/// pads of disjoint windows that tile it along one axis: the gradients of
/// slices of one value (a fused projection's query, key and value) are then
/// one copy each instead of a zero-filled tensor per slice and adds over
/// them. Exact: the adds only added zeros. Null where the tree is not that.
static Value concatOfPads(OpBuilder &b, AddOp root) {
  auto type = cast<RankedTensorType>(root.getType());
  SmallVector<PadOp> pads;
  SmallVector<Value> pending{root.getResult()};
  while (!pending.empty()) {
    Value v = pending.pop_back_val();
    if (v.getType() != type)
      return nullptr;
    if (auto add = v.getDefiningOp<AddOp>();
        add && (add == root || v.hasOneUse())) {
      pending.append({add.getLhs(), add.getRhs()});
      continue;
    }
    auto pad = v.getDefiningOp<PadOp>();
    if (!pad)
      return nullptr;
    pads.push_back(pad);
  }
  // The one axis every pad pads along.
  std::optional<int64_t> axis;
  for (PadOp pad : pads)
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (pad.getLow()[d] != 0 || pad.getHigh()[d] != 0) {
        if (axis && *axis != d)
          return nullptr;
        axis = d;
      }
  if (!axis)
    return nullptr;
  llvm::sort(pads, [&](PadOp x, PadOp y) {
    return x.getLow()[*axis] < y.getLow()[*axis];
  });
  int64_t next = 0;
  SmallVector<Value> pieces;
  for (PadOp pad : pads) {
    if (pad.getLow()[*axis] != next)
      return nullptr;
    next += cast<RankedTensorType>(pad.getInput().getType()).getDimSize(*axis);
    pieces.push_back(pad.getInput());
  }
  if (next != type.getDimSize(*axis))
    return nullptr;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(root);
  return ConcatOp::create(b, root.getLoc(), type, pieces, *axis);
}

namespace {
/// Records the ops a VJP creates (so only those are renamed after it) and
/// every op the sweep creates (so the unused ones can be erased at the end).
struct CreatedOps : OpBuilder::Listener {
  llvm::SmallPtrSet<Operation *, 16> ops;
  SmallVector<Operation *> all;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.insert(op);
    all.push_back(op);
  }
};
} // namespace

FailureOr<SmallVector<Value>> mlir::tg::buildGradients(OpBuilder &b,
                                                       Value loss,
                                                       ValueRange wrt) {
  Location lossLoc = loss.getLoc();
  // Ops that depend on some `wrt` value and on which the loss depends.
  llvm::SetVector<Operation *> forward;
  for (Value v : wrt)
    getForwardSlice(v, &forward);
  llvm::SetVector<Operation *> backward;
  BackwardSliceOptions options;
  options.inclusive = true;
  if (Operation *def = loss.getDefiningOp())
    (void)getBackwardSlice(def, &backward, options);
  SmallVector<Operation *> active;
  for (Operation *op : backward)
    if (forward.contains(op))
      active.push_back(op);
  llvm::sort(active, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });

  llvm::DenseMap<Value, Value> grads;
  // Adds `g` into the gradient of `v` (values used more than once).
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, gradLoc(lossLoc, valueName(v)), it->second, g);
  };
  Type lossType = loss.getType();
  auto one = DenseElementsAttr::get(
      cast<RankedTensorType>(lossType),
      b.getFloatAttr(cast<RankedTensorType>(lossType).getElementType(), 1.0));
  accumulate(loss, ConstantOp::create(b, gradLoc(lossLoc, valueName(loss)), one));

  CreatedOps created;
  OpBuilder::Listener *previous = b.getListener();
  b.setListener(&created);
  for (Operation *op : llvm::reverse(active)) {
    if (llvm::none_of(op->getResults(), [&](Value r) { return grads.count(r); }))
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable || !differentiable.hasVjp()) {
      b.setListener(previous);
      return op->emitOpError()
             << "is not differentiable, but the loss depends on it through a "
                "parameter; replace it or give the op a "
                "DifferentiableOpInterface implementation";
    }
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(grads.count(r) ? grads[r]
                                           : zerosLike(b, op->getLoc(), r.getType()));
    created.ops.clear();
    Location loc = gradLoc(op->getLoc(), valueName(op->getResult(0)));
    SmallVector<Value> operandGrads = differentiable.buildVjp(b, loc, resultGrads);
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g)
        continue;
      // Name a fresh gradient after the operand it belongs to.
      if (Operation *def = g.getDefiningOp();
          def && created.ops.contains(def) && def->getNumResults() == 1)
        def->setLoc(gradLoc(op->getLoc(), valueName(operand)));
      accumulate(operand, g);
    }
  }
  b.setListener(previous);
  // Values with the same gradient (an add's input and result) share one
  // concatenation.
  DenseMap<Operation *, Value> concats;
  for (auto &[v, g] : grads)
    if (auto add = g.getDefiningOp<AddOp>()) {
      Value &concat = concats[add];
      if (!concat && (concat = concatOfPads(b, add)))
        add.replaceAllUsesWith(concat);
      if (concat)
        g = concat;
    }

  SmallVector<Value> result;
  for (Value v : wrt)
    result.push_back(grads.count(v) ? grads[v]
                                    : zerosLike(b, gradLoc(lossLoc, valueName(v)),
                                                v.getType()));
  // VJPs build the gradients of every operand; drop those nothing needs
  // (e.g. of data inputs), newest first so chains of dead ops go too.
  llvm::SmallPtrSet<Operation *, 32> needed;
  for (Value g : result)
    needed.insert(g.getDefiningOp());
  for (Operation *op : llvm::reverse(created.all))
    if (op->use_empty() && !needed.contains(op))
      op->erase();
  return result;
}
