// tg-fuse-into-rows: the elementwise region computing a norm's or softmax's
// row input becomes the prologue of its row kernel (the residual add before
// a pre-norm block's norm, attention's scale and mask before its softmax),
// and the elementwise region consuming a norm or softmax gradient's dx its
// epilogue (the residual stream's gradient add, attention's scale), so each
// row is computed, normalised and passed on while it is in cache; a sum over
// the rows of what a norm gradient's kernel writes (the bias gradient of the
// projection before the residual add) joins that kernel's column pass; a sum
// reads its elementwise prologue (a gradient's squares) as it sums it; and
// the loss is computed with its gradient; the heads' transposes around a
// rope are read and written through by its kernel.
#include "RegionFusion.h"

#include "tg/IR/TgOps.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEINTOROWS
#include "tg/Passes/Passes.h.inc"

namespace {

/// The region result yielding `value`.
Value resultYielding(exec::DispatchRegionOp region, Value value) {
  auto yield = region.getBody().front().getTerminator();
  for (OpOperand &operand : yield->getOpOperands())
    if (operand.get() == value)
      return region->getResult(operand.getOperandNumber());
  return nullptr;
}

/// Whether something but `op` (or what it holds) reads `value`.
bool readElsewhere(Value value, Operation *op) {
  return llvm::any_of(value.getUsers(),
                      [&](Operation *user) { return !op->isAncestor(user); });
}

/// The regions of `block` whose one op is an OpTy, with that op, in program
/// order; collected before any is fused, which changes the block.
template <typename OpTy>
SmallVector<std::pair<exec::DispatchRegionOp, OpTy>> regionsOf(Block &block) {
  SmallVector<std::pair<exec::DispatchRegionOp, OpTy>> regions;
  for (auto region : block.getOps<exec::DispatchRegionOp>())
    if (auto op = dyn_cast_or_null<OpTy>(soleOp(region)))
      regions.push_back({region, op});
  return regions;
}

struct FuseIntoRowsPass : impl::TgFuseIntoRowsBase<FuseIntoRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (getOperation().isExternal())
      return; // a declaration: nothing to transform
    Block &block = getOperation().getBody().front();
    // The row ops' regions, in program order. What they absorb or are
    // absorbed by is elementwise, never one of them.
    SmallVector<std::pair<exec::DispatchRegionOp, Operation *>> rowRegions;
    for (auto region : block.getOps<exec::DispatchRegionOp>())
      if (Operation *rowOp = soleOp(region);
          rowOp && (takesRowPrologue(rowOp) || takesRowEpilogue(rowOp)))
        rowRegions.push_back({region, rowOp});
    for (auto [region, rowOp] : rowRegions) {
      if (takesRowPrologue(rowOp))
        fusePrologue(region, rowOp);
      else
        fuseEpilogue(region, rowOp);
    }
    // The norm gradients' regions, with or without an epilogue now.
    SmallVector<std::pair<exec::DispatchRegionOp, Operation *>> normGrads;
    for (auto region : block.getOps<exec::DispatchRegionOp>()) {
      Operation *rowOp = soleOp(region);
      if (!rowOp)
        rowOp = rowGroupOp(region.getBody().front());
      if (isa_and_nonnull<LayerNormGradOp, RmsNormGradOp>(rowOp))
        normGrads.push_back({region, rowOp});
    }
    for (auto [region, rowOp] : normGrads)
      fuseColumnSums(region, rowOp);
    for (auto [region, rope] : regionsOf<RopeOp>(block))
      fuseHeadsTransposes(region, rope);
    if (!lossWithGradient)
      return;
    for (auto [region, loss] : regionsOf<CrossEntropyOp>(block))
      fuseLossWithGradient(region, loss);
  }

private:
  /// The elementwise region computing `rowOp`'s row input joins its region.
  void fusePrologue(exec::DispatchRegionOp region, Operation *rowOp) {
    Value x = rowOp->getOperand(0);
    auto producer = x.getDefiningOp<exec::DispatchRegionOp>();
    if (!producer)
      return;
    std::string why = refusal(producer, region, x, /*prologue=*/true);
    // A sum may still take the ops that compute its input alone (the
    // vocabulary-parallel loss's exponentials, whose shifted logits the
    // target pick reads too): they move to a region of their own first.
    bool split = false;
    if (!why.empty() && isSum(rowOp) &&
        elementwiseGroupShape(producer.getBody().front())) {
      llvm::SetVector<Operation *> moving = opsOnlyFor(producer, x, region);
      if (!moving.empty()) {
        auto [rest, part] = splitOff(producer, moving);
        x = rowOp->getOperand(0);
        if (refusal(part, region, x, /*prologue=*/true).empty()) {
          producer = part;
          why = "";
          split = true;
        } else {
          producer = absorb(part, rest);
          x = rowOp->getOperand(0);
        }
      }
    }
    if (remarks) {
      InFlightDiagnostic remark =
          producerOf(cast<OpResult>(x))->emitRemark();
      if (!why.empty())
        remark << "not fused into the row kernel of '"
               << rowOp->getName().getStringRef() << "': " << why;
      else if (readElsewhere(x, rowOp))
        remark << "fused into the row kernel of '"
               << rowOp->getName().getStringRef()
               << "' as its prologue: saves reading " << byteSize(x)
               << " bytes back (it is still written: read later)";
      else
        remark << (split ? "its ops that only the sum reads " : "")
               << "fused into the row kernel of '"
               << rowOp->getName().getStringRef()
               << "' as its prologue: saves writing and reading "
               << byteSize(x) << " bytes";
    }
    if (why.empty())
      absorb(region, producer);
  }

  /// The ops of `producer` computing its result `x` that nothing but
  /// `consumer` needs, directly or through each other; none if something
  /// else reads `x` itself.
  static llvm::SetVector<Operation *>
  opsOnlyFor(exec::DispatchRegionOp producer, Value x,
             exec::DispatchRegionOp consumer) {
    Block &body = producer.getBody().front();
    Operation *yield = body.getTerminator();
    Operation *def =
        yield->getOperand(cast<OpResult>(x).getResultNumber()).getDefiningOp();
    llvm::SetVector<Operation *> moving;
    if (!def || def->getBlock() != &body || readElsewhere(x, consumer))
      return moving;
    // A use is fine inside the moving ops, or as a result only the
    // consumer reads.
    auto onlyFor = [&](Operation *op) {
      for (OpOperand &use : op->getUses()) {
        Operation *user = use.getOwner();
        if (moving.contains(user))
          continue;
        if (user != yield ||
            readElsewhere(producer->getResult(use.getOperandNumber()),
                          consumer))
          return false;
      }
      return true;
    };
    moving.insert(def);
    if (!onlyFor(def))
      return {};
    for (bool grew = true; grew;) {
      grew = false;
      for (Operation &op : llvm::reverse(body.without_terminator()))
        if (!moving.contains(&op) && !isa<ConstantOp>(op) &&
            llvm::any_of(op.getUsers(),
                         [&](Operation *u) { return moving.contains(u); }) &&
            onlyFor(&op))
          grew |= moving.insert(&op);
    }
    return moving;
  }

  /// `rowOp`'s region joins the elementwise region consuming its dx.
  void fuseEpilogue(exec::DispatchRegionOp region, Operation *rowOp) {
    Value dx = resultYielding(region, rowOp->getResult(0));
    if (!dx)
      return;
    // The first kernel reading dx (readBeforeConsumer refuses it if
    // anything else reads dx before).
    exec::DispatchRegionOp consumer;
    for (Operation *user : dx.getUsers()) {
      auto reader = dyn_cast<exec::DispatchRegionOp>(
          region->getBlock()->findAncestorOpInBlock(*user));
      if (reader && (!consumer || reader->isBeforeInBlock(consumer)))
        consumer = reader;
    }
    if (!consumer)
      return;
    std::string why = refusal(region, consumer, dx, /*prologue=*/false);
    if (remarks) {
      InFlightDiagnostic remark = rowOp->emitRemark();
      if (!why.empty())
        remark << "dx not fused into its consumer as an epilogue: " << why;
      else if (readElsewhere(dx, consumer))
        remark << "dx fused into its consumer as an epilogue: saves reading "
               << byteSize(dx) << " bytes back (it is still written: read "
               << "later)";
      else
        remark << "dx fused into its consumer as an epilogue: saves writing "
                  "and reading "
               << byteSize(dx) << " bytes";
    }
    if (why.empty())
      absorb(consumer, region);
  }

  /// Each region that is a reduce_sum over the rows of a value `region`
  /// yields in its row space (dx, or its epilogue's value: the residual
  /// stream's gradient, whose column sums are the bias gradient of the
  /// projection before the add) joins `region`, whose column pass sums it
  /// beside the norm's weight and bias gradients: the rows are read there,
  /// not by a kernel of its own (on CUDA two launches fewer). Only a value
  /// something else reads too, which the kernel stores anyway. The sum
  /// reads nothing else, so it may move up to `region`.
  void fuseColumnSums(exec::DispatchRegionOp region, Operation *rowOp) {
    SmallVector<exec::DispatchRegionOp> sums;
    for (OpResult rows : region->getResults()) {
      // The column sums of these rows; the rows are stored only if
      // something else reads them too (another sum of them does not count:
      // it would be fused as well).
      auto columnSumRegion = [&](Operation *user) -> exec::DispatchRegionOp {
        auto sumRegion = dyn_cast<exec::DispatchRegionOp>(
            region->getBlock()->findAncestorOpInBlock(*user));
        if (!sumRegion || soleOp(sumRegion) != user ||
            !isColumnSumOf(user, rowOp))
          return nullptr;
        return sumRegion;
      };
      SmallVector<exec::DispatchRegionOp> ofRows;
      for (Operation *user : rows.getUsers())
        if (exec::DispatchRegionOp sumRegion = columnSumRegion(user))
          ofRows.push_back(sumRegion);
      bool stored = llvm::any_of(rows.getUsers(), [&](Operation *user) {
        return !columnSumRegion(user);
      });
      for (exec::DispatchRegionOp sumRegion : ofRows) {
        if (remarks) {
          InFlightDiagnostic remark = soleOp(sumRegion)->emitRemark();
          if (stored)
            remark << "fused into the column pass of '"
                   << rowOp->getName().getStringRef() << "', which reads the "
                   << byteSize(rows) << " bytes of rows it sums: a kernel "
                   << "fewer";
          else
            remark << "not fused into the column pass of '"
                   << rowOp->getName().getStringRef() << "': nothing else "
                   << "reads the rows, which the kernel would store for the "
                   << "sums alone";
        }
        if (stored)
          sums.push_back(sumRegion);
      }
    }
    for (exec::DispatchRegionOp sumRegion : sums) {
      sumRegion->moveAfter(region);
      region = absorb(sumRegion, region);
    }
  }

  /// The transposes between [B, T, H, D] and [B, H, T, D] next to a rope
  /// (Llama's queries and keys into their heads before it, their gradients
  /// back into tokens after its inverse) join its kernel, which then reads
  /// or writes its rows where the transpose would have moved them: the
  /// heads are not written and read again in the other layout. Only a
  /// transpose that only the rope reads, or that alone reads the rope's
  /// result, is taken.
  void fuseHeadsTransposes(exec::DispatchRegionOp region, RopeOp rope) {
    auto report = [&](Value heads, bool before, const std::string &why) {
      if (!remarks)
        return;
      InFlightDiagnostic remark = rope.emitRemark();
      StringRef which = before ? "its input's" : "its result's";
      if (why.empty())
        remark << "heads' transpose (" << which << ") fused into the rope "
               << "kernel: saves writing and reading " << byteSize(heads)
               << " bytes";
      else
        remark << "heads' transpose (" << which << ") not fused into the "
               << "rope kernel: " << why;
    };
    Value input = rope.getInput();
    if (auto producer = input.getDefiningOp<exec::DispatchRegionOp>();
        producer && isHeadsTranspose(soleOp(producer))) {
      std::string why = readElsewhere(input, region)
                            ? "something else reads the transposed heads"
                            : readBeforeConsumer(producer, region);
      report(input, /*before=*/true, why);
      if (why.empty())
        region = absorb(region, producer);
    }
    Value result = resultYielding(region, rope.getResult());
    if (!result || !result.hasOneUse())
      return;
    auto consumer = dyn_cast<exec::DispatchRegionOp>(
        region->getBlock()->findAncestorOpInBlock(
            *result.getUses().begin()->getOwner()));
    if (!consumer || !isHeadsTranspose(soleOp(consumer)))
      return;
    std::string why = readBeforeConsumer(region, consumer);
    report(result, /*before=*/false, why);
    if (why.empty())
      absorb(consumer, region);
  }

  /// The region of the cross_entropy_grad of `loss`'s logits and targets
  /// takes `loss`'s region in: one kernel computes both from one pass over
  /// each row (the gradient recomputed the softmax the loss had computed).
  void fuseLossWithGradient(exec::DispatchRegionOp region,
                            CrossEntropyOp loss) {
    exec::DispatchRegionOp gradRegion;
    for (Operation *user : loss.getLogits().getUsers())
      if (auto grad = dyn_cast<CrossEntropyGradOp>(user);
          grad && grad.getTargets() == loss.getTargets())
        if (auto parent = dyn_cast<exec::DispatchRegionOp>(grad->getParentOp());
            parent && soleOp(parent) == grad && region->isBeforeInBlock(parent))
          gradRegion = parent;
    if (!gradRegion)
      return;
    std::string why = readBeforeConsumer(region, gradRegion);
    if (remarks) {
      InFlightDiagnostic remark = loss.emitRemark();
      if (why.empty())
        remark << "computed with its gradient in one kernel: saves a pass "
                  "over the logits ("
               << byteSize(loss.getLogits()) << " bytes)";
      else
        remark << "not computed with its gradient: " << why;
    }
    if (!why.empty())
      return;
    exec::DispatchRegionOp pair = absorb(gradRegion, region);
    fuseLossLinks(pair, loss);
  }

  /// What the loss with its gradient reads its logits through and writes
  /// its gradient through joins its kernel (see lossWithGradient): the cast
  /// widening bf16 logits and the slice of the rows the aligned logits GEMM
  /// padded; the cast narrowing the gradient and the pad for the GEMMs that
  /// read it. None of the intermediates is stored.
  void fuseLossLinks(exec::DispatchRegionOp pair, CrossEntropyOp loss) {
    Value logits = loss.getLogits();
    for (bool (*matches)(Operation *) : {isWideningCast, isRowSlice}) {
      auto producer = logits.getDefiningOp<exec::DispatchRegionOp>();
      Operation *op = producer ? soleOp(producer) : nullptr;
      if (!op || !matches(op) || readElsewhere(logits, pair) ||
          !tooManyInputs(pair, producer, maxInputs).empty() ||
          !readBeforeConsumer(producer, pair).empty())
        continue;
      if (remarks)
        op->emitRemark() << "fused into the loss with its gradient, which reads through it: "
                            "saves writing and reading "
                         << byteSize(logits) << " bytes";
      pair = absorb(pair, producer);
      logits = op->getOperand(0);
    }
    auto grad = *pair.getBody().front().getOps<CrossEntropyGradOp>().begin();
    Value inside = grad.getResult();
    for (bool (*matches)(Operation *) : {isNarrowingCast, isRowPad}) {
      Value gradient = resultYielding(pair, inside);
      if (!gradient || !gradient.hasOneUse())
        return;
      auto consumer = (*gradient.getUsers().begin())->getParentOfType<exec::DispatchRegionOp>();
      Operation *op = consumer ? soleOp(consumer) : nullptr;
      if (!op || !matches(op) || !tooManyInputs(consumer, pair, maxInputs).empty() ||
          !readBeforeConsumer(pair, consumer).empty())
        continue;
      if (remarks)
        op->emitRemark() << "fused into the loss with its gradient, which writes through it: "
                            "saves writing and reading "
                         << byteSize(gradient) << " bytes";
      pair = absorb(consumer, pair);
      inside = op->getResult(0);
    }
  }

  /// Why `consumer` may not absorb `producer`, or "": the consumer is a row
  /// op's region taking the producer as its prologue, or the producer is
  /// one whose dx (`value`) the consumer takes as its epilogue.
  std::string refusal(exec::DispatchRegionOp producer,
                      exec::DispatchRegionOp consumer, Value value,
                      bool prologue) {
    exec::DispatchRegionOp elementwise = prologue ? producer : consumer;
    std::optional<ArrayRef<int64_t>> shape =
        elementwiseGroupShape(elementwise.getBody().front());
    if (!shape)
      return prologue ? "it is not elementwise"
                      : "its consumer is not elementwise";
    if (*shape != cast<ShapedType>(value.getType()).getShape())
      return "its elementwise ops have another shape";
    if (isGemmBiasAdd(elementwise))
      return "it is a bias add of a GEMM's product, left to "
             "exec-fuse-gemm-bias as the GEMM's epilogue";
    if (prologue && isSum(soleOp(consumer)) &&
        llvm::any_of(producer->getResults(), [&](Value result) {
          return readElsewhere(result, consumer);
        }))
      return "something else reads it too, and a sum's kernel stores no "
             "element";
    if (!prologue && llvm::any_of(producer->getResults(), [&](Value result) {
          return result != value &&
                 llvm::any_of(result.getUsers(), [&](Operation *user) {
                   return consumer->isAncestor(user);
                 });
        }))
      return "the consumer reads the weight or bias gradient too, sums "
             "over every row that are complete only after the last one";
    if (std::string why = tooManyInputs(consumer, producer, maxInputs);
        !why.empty())
      return why;
    return readBeforeConsumer(producer, consumer);
  }
};

} // namespace
} // namespace mlir::tg
