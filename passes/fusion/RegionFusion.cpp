#include "RegionFusion.h"

#include "tg/IR/TgOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::tg {

Operation *soleOp(exec::DispatchRegionOp region) {
  Block &body = region.getBody().front();
  return body.getOperations().size() == 2 ? &body.front() : nullptr;
}

int64_t byteSize(Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getNumElements() *
         int64_t(llvm::divideCeil(type.getElementTypeBitWidth(), 8));
}

Operation *producerOf(OpResult result) {
  auto region = cast<exec::DispatchRegionOp>(result.getOwner());
  Value yielded = region.getBody().front().getTerminator()->getOperand(
      result.getResultNumber());
  Operation *op = yielded.getDefiningOp();
  return op ? op : region;
}

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

/// The buffers the kernel of `region` and `producer` merged would read:
/// what either uses from outside, but for the producer's own results and
/// constants.
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

std::string tooManyInputs(exec::DispatchRegionOp region,
                          exec::DispatchRegionOp producer, int64_t maxInputs) {
  int64_t inputs = mergedInputCount(region, producer);
  if (inputs <= maxInputs)
    return "";
  return llvm::formatv("the kernel would read {0} buffers, more than "
                       "max-inputs ({1}): a GPU kernel's parameters are "
                       "limited",
                       inputs, maxInputs)
      .str();
}

std::string readBeforeConsumer(exec::DispatchRegionOp producer,
                               exec::DispatchRegionOp region) {
  Block *block = region->getBlock();
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
  body.getOperations().splice(body.begin(), from.getOperations(), from.begin(),
                              std::prev(from.end()));
  cloneSplatConstants(region);
  // Where nothing outside reads the producer's results, `region` keeps its
  // results and is the merged region: a new op in its place would take a
  // place in the block's order between its neighbours', which a chain of
  // merges in one place soon runs out of (every op of the block numbered
  // again, Operation::updateOrderIfNecessary).
  if (kept.empty()) {
    producer.erase();
    return region;
  }

  OpBuilder b(region);
  auto merged = exec::DispatchRegionOp::create(b, region.getLoc(),
                                               ValueRange(yielded).getTypes());
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

std::pair<exec::DispatchRegionOp, exec::DispatchRegionOp>
splitOff(exec::DispatchRegionOp region,
         const llvm::SetVector<Operation *> &moving) {
  Block &body = region.getBody().front();
  auto yield = cast<exec::YieldOp>(body.getTerminator());
  // Which results stay, which move, and what the moved ops read from the
  // ops that stay.
  SmallVector<unsigned> staying, moved;
  for (auto [i, v] : llvm::enumerate(yield.getValues()))
    (moving.contains(v.getDefiningOp()) ? moved : staying).push_back(i);
  llvm::SetVector<Value> boundary;
  for (Operation *op : moving)
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && def->getBlock() == &body && !moving.contains(def) &&
          !isa<ConstantOp>(def))
        boundary.insert(operand);

  OpBuilder b(region);
  SmallVector<Value> firstYield;
  for (unsigned i : staying)
    firstYield.push_back(yield.getValues()[i]);
  // A boundary value the first region yields anyway is read from there.
  boundary.remove_if(
      [&](Value v) { return llvm::is_contained(firstYield, v); });
  llvm::append_range(firstYield, boundary);
  auto first = exec::DispatchRegionOp::create(
      b, region.getLoc(), ValueRange(firstYield).getTypes());
  SmallVector<Value> secondYield;
  for (unsigned i : moved)
    secondYield.push_back(yield.getValues()[i]);
  auto second = exec::DispatchRegionOp::create(
      b, region.getLoc(), ValueRange(secondYield).getTypes());

  // The second region: the moved ops, reading the boundary values from the
  // first region's results and holding copies of the constants they use.
  IRMapping mapping;
  for (auto [value, result] : llvm::zip(firstYield, first.getResults()))
    if (!mapping.contains(value))
      mapping.map(value, result);
  Block *secondBody = b.createBlock(&second.getBody());
  b.setInsertionPointToEnd(secondBody);
  for (Operation &op : body.without_terminator())
    if (moving.contains(&op))
      for (Value operand : op.getOperands())
        if (auto constant = operand.getDefiningOp<ConstantOp>();
            constant && constant->getBlock() == &body &&
            !mapping.contains(operand))
          b.clone(*constant, mapping);
  for (Operation &op : body.without_terminator())
    if (moving.contains(&op))
      b.clone(op, mapping);
  SmallVector<Value> secondValues;
  for (Value v : secondYield)
    secondValues.push_back(mapping.lookup(v));
  exec::YieldOp::create(b, region.getLoc(), secondValues);

  // The first region: the ops that stay, moved over as they are.
  yield->setOperands(firstYield);
  for (Operation *op : moving)
    op->dropAllUses();
  for (Operation *op : moving)
    op->erase();
  first.getBody().takeBody(region.getBody());
  for (auto [n, i] : llvm::enumerate(staying))
    region->getResult(i).replaceAllUsesWith(first->getResult(n));
  for (auto [n, i] : llvm::enumerate(moved))
    region->getResult(i).replaceAllUsesWith(second->getResult(n));
  region.erase();
  return {first, second};
}

} // namespace mlir::tg
