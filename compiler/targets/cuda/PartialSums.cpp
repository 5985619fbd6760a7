#include "PartialSums.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::tg::cuda {

namespace {

/// `type` (a float or a vector of floats) with `element` as its elements.
Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(element);
  return element;
}

/// Whether `v` is 0.0 (a constant, or a vector of it).
bool isZero(Value v) {
  if (auto broadcast = v.getDefiningOp<vector::BroadcastOp>())
    v = broadcast.getSource();
  return matchPattern(v, m_AnyZeroFloat());
}

/// `v` if it extends a value of 32 bits or fewer (to float64), else null.
arith::ExtFOp narrowExtension(Value v) {
  auto extend = v.getDefiningOp<arith::ExtFOp>();
  return extend && getElementTypeOrSelf(extend.getIn().getType())
                           .getIntOrFloatBitWidth() <= 32
             ? extend
             : arith::ExtFOp();
}

/// The source of `extend` (narrowExtension's) as `narrow`, float32 or a
/// vector of it: itself, or extended to it from a 16-bit float.
Value narrowSource(OpBuilder &b, Location loc, arith::ExtFOp extend,
                   Type narrow) {
  Value source = extend.getIn();
  return source.getType() == narrow
             ? source
             : arith::ExtFOp::create(b, loc, narrow, source).getResult();
}

/// The float32 term that fold `k` of `loop` adds, extended to float64, where
/// it is such a fold: the add and the extension.
std::optional<std::pair<arith::AddFOp, arith::ExtFOp>>
narrowableSum(scf::ForOp loop, unsigned k) {
  BlockArgument acc = loop.getRegionIterArgs()[k];
  if (!getElementTypeOrSelf(acc.getType()).isF64() || !acc.hasOneUse())
    return std::nullopt;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  auto add = yield.getOperand(k).getDefiningOp<arith::AddFOp>();
  if (!add || add->getBlock() != loop.getBody() || !add->hasOneUse())
    return std::nullopt;
  if (add.getLhs() != acc && add.getRhs() != acc)
    return std::nullopt;
  Value term = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  arith::ExtFOp extend = narrowExtension(term);
  if (term == acc || !extend)
    return std::nullopt;
  return std::pair{add, extend};
}

} // namespace

SmallVector<bool> narrowPartialSums(scf::ForOp loop,
                                    std::optional<int64_t> terms,
                                    int64_t mostTerms) {
  SmallVector<bool> narrowed(loop.getNumRegionIterArgs(), false);
  if (!terms || mostTerms <= 0 || *terms > mostTerms)
    return narrowed;
  OpBuilder b(loop);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (unsigned k = 0; k < loop.getNumRegionIterArgs(); ++k) {
    auto sum = narrowableSum(loop, k);
    if (!sum)
      continue;
    auto [add, extend] = *sum;
    Type narrow = withElement(add.getType(), b.getF32Type());
    Location loc = add.getLoc();
    BlockArgument acc = loop.getRegionIterArgs()[k];
    acc.setType(narrow);
    loop.getResult(k).setType(narrow);
    b.setInsertionPoint(loop);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(narrow));
    loop.getInitArgsMutable()[k].assign(zero);
    b.setInsertionPoint(add);
    Value term = narrowSource(b, loc, extend, narrow);
    Value next =
        arith::AddFOp::create(b, loc, acc, term, add.getFastmathAttr());
    yield->setOperand(k, next);
    add.erase();
    if (extend->use_empty())
      extend.erase();
    narrowed[k] = true;
  }
  return narrowed;
}

bool narrowMaxSumExp(scf::ForOp loop, std::optional<int64_t> terms,
                     int64_t mostTerms) {
  if (!terms || mostTerms <= 0 || *terms > mostTerms)
    return false;
  BlockArgument sum = loop.getRegionIterArgs()[1];
  if (!getElementTypeOrSelf(sum.getType()).isF64() ||
      !isZero(loop.getInitArgs()[1]))
    return false;
  Type narrow = withElement(sum.getType(), Float32Type::get(loop.getContext()));
  // The float64 values the sum's ops take from outside them: the
  // exponential's extension (whose source they take instead) and the
  // constant 1.0 (scalar or broadcast).
  auto constantOf = [](Value v) -> std::optional<double> {
    if (auto broadcast = v.getDefiningOp<vector::BroadcastOp>())
      v = broadcast.getSource();
    FloatAttr value;
    if (!matchPattern(v, m_Constant(&value)))
      return std::nullopt;
    return value.getValueAsDouble();
  };
  // The ops the sum flows through to its yield, in order: each float64
  // result becomes float32, and so must every float64 operand.
  llvm::SetVector<Operation *> chain;
  DenseSet<Value> reached{sum};
  for (Operation &op : loop.getBody()->without_terminator())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return reached.contains(v); })) {
      chain.insert(&op);
      reached.insert(op.getResults().begin(), op.getResults().end());
    }
  auto outsideWide = [&](Value v) {
    return !reached.contains(v) && getElementTypeOrSelf(v.getType()).isF64();
  };
  for (Operation *op : chain) {
    if (!isa<arith::AddFOp, arith::MulFOp, arith::SelectOp>(op) ||
        op->getResult(0).getType() != sum.getType())
      return false;
    for (Value v : op->getOperands())
      if (outsideWide(v) && !narrowExtension(v) && !constantOf(v))
        return false;
  }
  OpBuilder b(loop.getContext());
  for (Operation *op : chain) {
    b.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (!outsideWide(v))
        continue;
      arith::ExtFOp extend = narrowExtension(v);
      operand.set(extend ? narrowSource(b, op->getLoc(), extend, narrow)
                         : createScalarOrSplatConstant(
                               b, op->getLoc(), narrow,
                               APFloat(float(*constantOf(v)))));
    }
    op->getResult(0).setType(narrow);
  }
  sum.setType(narrow);
  loop.getResult(1).setType(narrow);
  b.setInsertionPoint(loop);
  loop.getInitArgsMutable()[1].assign(
      arith::ConstantOp::create(b, loop.getLoc(), b.getZeroAttr(narrow)));
  return true;
}

SmallVector<Value> widenPartialSums(OpBuilder &b, Location loc,
                                    ValueRange results, ValueRange inits,
                                    ArrayRef<bool> narrowed) {
  SmallVector<Value> wide(results);
  for (auto [k, init] : llvm::enumerate(inits)) {
    if (!narrowed[k])
      continue;
    wide[k] = arith::ExtFOp::create(
        b, loc, withElement(results[k].getType(), b.getF64Type()), results[k]);
    if (!isZero(init)) {
      assert(init.getType() == wide[k].getType() &&
             "a reduced share's fold starts from 0.0");
      wide[k] = arith::AddFOp::create(b, loc, init, wide[k]);
    }
  }
  return wide;
}

} // namespace mlir::tg::cuda
