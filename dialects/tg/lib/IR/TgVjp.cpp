// Vector-Jacobian products of the differentiable tg ops. Each op builds the
// gradients of its operands from the gradients of its results; the autodiff
// pass (passes/autodiff) only sweeps the graph and accumulates.
#include "tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tg;

#include "tg/IR/TgInterfaces.cpp.inc"

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A scalar constant of `v`'s element type, for broadcasting against `v`.
Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  auto type = RankedTensorType::get({}, typeOf(like).getElementType());
  return ConstantOp::create(b, loc,
                            DenseElementsAttr::get(type, b.getFloatAttr(
                                                             type.getElementType(), value)));
}

/// Sums the broadcast dims of `grad` away so that it has `target`'s shape:
/// the one place where numpy broadcasting is undone.
Value reduceToShape(OpBuilder &b, Location loc, Value grad, Type target) {
  ArrayRef<int64_t> from = typeOf(grad).getShape();
  ArrayRef<int64_t> to = cast<RankedTensorType>(target).getShape();
  if (from == to)
    return grad;
  size_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  Value summed = ReduceSumOp::create(b, loc, grad, axes, /*keep_dims=*/true);
  return ReshapeOp::create(b, loc, target, summed);
}

/// Swaps the last two dims.
Value transposeLastTwo(OpBuilder &b, Location loc, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, v, perm);
}

/// Folds all leading dims of `v` into its second-to-last: [..., M, K] ->
/// [prod(...) * M, K].
Value flattenToMatrix(OpBuilder &b, Location loc, Value v) {
  auto type = typeOf(v);
  int64_t cols = type.getShape().back();
  return ReshapeOp::create(
      b, loc, type.clone({type.getNumElements() / cols, cols}), v);
}
} // namespace

//===----------------------------------------------------------------------===//
// Constants, casts and views
//===----------------------------------------------------------------------===//

SmallVector<Value> ConstantOp::buildVjp(OpBuilder &, Location, ValueRange) {
  return {};
}

SmallVector<Value> CastOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  if (!isa<FloatType>(getInput().getType().getElementType()))
    return {Value()};
  return {CastOp::create(b, loc, getInput().getType(), grads[0])};
}

SmallVector<Value> ReshapeOp::buildVjp(OpBuilder &b, Location loc,
                                       ValueRange grads) {
  return {ReshapeOp::create(b, loc, getInput().getType(), grads[0])};
}

SmallVector<Value> TransposeOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  return {TransposeOp::create(b, loc, grads[0], inverse)};
}

SmallVector<Value> BroadcastOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  return {reduceToShape(b, loc, grads[0], getInput().getType())};
}

SmallVector<Value> SliceOp::buildVjp(OpBuilder &b, Location loc,
                                     ValueRange grads) {
  ArrayRef<int64_t> dims = getInput().getType().getShape();
  SmallVector<int64_t> high;
  for (auto [d, o, s] : llvm::zip(dims, getOffsets(), getSizes()))
    high.push_back(d - o - s);
  return {PadOp::create(b, loc, grads[0], getOffsets(), high)};
}

SmallVector<Value> PadOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {SliceOp::create(b, loc, grads[0], getLow(),
                          getInput().getType().getShape())};
}

SmallVector<Value> ConcatOp::buildVjp(OpBuilder &b, Location loc,
                                      ValueRange grads) {
  int64_t rank = getResult().getType().getRank();
  // I64Attr getters return uint64_t: read the axis back as signed.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  SmallVector<Value> result;
  SmallVector<int64_t> offsets(rank, 0);
  for (Value input : getInputs()) {
    ArrayRef<int64_t> sizes = typeOf(input).getShape();
    result.push_back(SliceOp::create(b, loc, grads[0], offsets, sizes));
    offsets[axis] += sizes[axis];
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

SmallVector<Value> AddOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {reduceToShape(b, loc, grads[0], getLhs().getType()),
          reduceToShape(b, loc, grads[0], getRhs().getType())};
}

SmallVector<Value> SubOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  Value negated = NegOp::create(b, loc, grads[0]);
  return {reduceToShape(b, loc, grads[0], getLhs().getType()),
          reduceToShape(b, loc, negated, getRhs().getType())};
}

SmallVector<Value> MulOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  Value dl = MulOp::create(b, loc, grads[0], getRhs());
  Value dr = MulOp::create(b, loc, grads[0], getLhs());
  return {reduceToShape(b, loc, dl, getLhs().getType()),
          reduceToShape(b, loc, dr, getRhs().getType())};
}

SmallVector<Value> DivOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  // d(l/r)/dl = 1/r; d(l/r)/dr = -(l/r)/r.
  Value dl = DivOp::create(b, loc, grads[0], getRhs());
  Value dr = NegOp::create(b, loc, MulOp::create(b, loc, dl, getResult()));
  return {reduceToShape(b, loc, dl, getLhs().getType()),
          reduceToShape(b, loc, dr, getRhs().getType())};
}

SmallVector<Value> PowOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  // d(l^r)/dl = r * l^(r-1) = r * result / l; d(l^r)/dr = log(l) * result.
  Value gy = MulOp::create(b, loc, grads[0], getResult());
  Value dl = DivOp::create(b, loc, MulOp::create(b, loc, gy, getRhs()), getLhs());
  Value dr = MulOp::create(b, loc, gy, LogOp::create(b, loc, getLhs()));
  return {reduceToShape(b, loc, dl, getLhs().getType()),
          reduceToShape(b, loc, dr, getRhs().getType())};
}

SmallVector<Value> NegOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {NegOp::create(b, loc, grads[0])};
}

SmallVector<Value> ExpOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {MulOp::create(b, loc, grads[0], getResult())};
}

SmallVector<Value> LogOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {DivOp::create(b, loc, grads[0], getInput())};
}

SmallVector<Value> TanhOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  // (1 - y^2) g
  Value y2 = MulOp::create(b, loc, getResult(), getResult());
  Value one = scalar(b, loc, y2, 1.0);
  return {MulOp::create(b, loc, grads[0], SubOp::create(b, loc, one, y2))};
}

SmallVector<Value> SqrtOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  // g / (2 y)
  Value half = scalar(b, loc, getResult(), 0.5);
  return {DivOp::create(b, loc, MulOp::create(b, loc, grads[0], half),
                        getResult())};
}

SmallVector<Value> RsqrtOp::buildVjp(OpBuilder &b, Location loc,
                                     ValueRange grads) {
  // -0.5 g y^3
  Value y = getResult();
  Value y3 = MulOp::create(b, loc, MulOp::create(b, loc, y, y), y);
  Value k = scalar(b, loc, y, -0.5);
  return {MulOp::create(b, loc, MulOp::create(b, loc, grads[0], y3), k)};
}

SmallVector<Value> CosOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  Value sin = SinOp::create(b, loc, getInput());
  return {NegOp::create(b, loc, MulOp::create(b, loc, grads[0], sin))};
}

SmallVector<Value> SinOp::buildVjp(OpBuilder &b, Location loc,
                                   ValueRange grads) {
  return {MulOp::create(b, loc, grads[0], CosOp::create(b, loc, getInput()))};
}

SmallVector<Value> SiluOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  return {SiluGradOp::create(b, loc, getInput(), grads[0])};
}

SmallVector<Value> GeluOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  return {GeluGradOp::create(b, loc, getInput(), grads[0], getApproximate())};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Broadcasts the gradient of a reduction back over the reduced dims.
static Value expandReduced(OpBuilder &b, Location loc, Value grad, Value input,
                           ArrayRef<int64_t> axes) {
  auto inputType = typeOf(input);
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t axis : axes)
    kept[axis < 0 ? axis + inputType.getRank() : axis] = 1;
  Value shaped =
      ReshapeOp::create(b, loc, typeOf(grad).clone(kept), grad);
  return BroadcastOp::create(b, loc, inputType, shaped);
}

SmallVector<Value> ReduceSumOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  return {expandReduced(b, loc, grads[0], getInput(), getAxes())};
}

SmallVector<Value> ReduceMeanOp::buildVjp(OpBuilder &b, Location loc,
                                          ValueRange grads) {
  int64_t count = getInput().getType().getNumElements() /
                  getResult().getType().getNumElements();
  Value scaled = MulOp::create(b, loc, grads[0],
                               scalar(b, loc, grads[0], 1.0 / double(count)));
  return {expandReduced(b, loc, scaled, getInput(), getAxes())};
}

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

SmallVector<Value> EmbeddingOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  return {EmbeddingGradOp::create(b, loc, getTable().getType(), getIndices(),
                                  grads[0], getOffset()),
          Value(), Value()};
}

SmallVector<Value> MatmulOp::buildVjp(OpBuilder &b, Location loc,
                                      ValueRange grads) {
  Value a = getLhs(), w = getRhs(), g = grads[0];
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  // With A' = op(A), B' = op(B) and C = A' B': dA' = dC B'^T, dB' = A'^T dC.
  Value dA = MatmulOp::create(b, loc, g, w, /*transpose_lhs=*/false,
                              /*transpose_rhs=*/!tr);
  if (tl)
    dA = transposeLastTwo(b, loc, dA);
  // A rank-2 rhs is shared by every batch: its gradient sums over them, which
  // a matmul of the flattened operands does in one go.
  if (typeOf(w).getRank() == 2 && typeOf(a).getRank() > 2) {
    a = tl ? flattenToMatrix(b, loc, transposeLastTwo(b, loc, a))
           : flattenToMatrix(b, loc, a);
    g = flattenToMatrix(b, loc, g);
    tl = false;
  }
  Value dB = tr ? MatmulOp::create(b, loc, g, a, /*transpose_lhs=*/true,
                                   /*transpose_rhs=*/tl)
                : MatmulOp::create(b, loc, a, g, /*transpose_lhs=*/!tl,
                                   /*transpose_rhs=*/false);
  return {dA, dB};
}

SmallVector<Value> LayerNormOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  auto op = LayerNormGradOp::create(b, loc, getInput(), getWeight(), grads[0],
                                    getEpsilonAttr());
  return {op.getInputGrad(), op.getWeightGrad(), op.getBiasGrad()};
}

SmallVector<Value> RmsNormOp::buildVjp(OpBuilder &b, Location loc,
                                       ValueRange grads) {
  auto op = RmsNormGradOp::create(b, loc, getInput(), getWeight(), grads[0],
                                  getEpsilonAttr());
  return {op.getInputGrad(), op.getWeightGrad()};
}

SmallVector<Value> SoftmaxOp::buildVjp(OpBuilder &b, Location loc,
                                       ValueRange grads) {
  return {SoftmaxGradOp::create(b, loc, getResult(), grads[0])};
}

SmallVector<Value> AttentionOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  auto op = AttentionGradOp::create(b, loc, getQuery(), getKey(), getValue(),
                                    grads[0], getScaleAttr(), getCausalAttr(),
                                    getWindowAttr());
  return {op.getQueryGrad(), op.getKeyGrad(), op.getValueGrad()};
}

SmallVector<Value> RopeOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  // A rotation's transpose is the rotation by the negated angle.
  return {RopeOp::create(b, loc, grads[0], getThetaAttr(),
                         getInverse() ? UnitAttr() : b.getUnitAttr(),
                         getScalingFactorAttr(), getLowFreqFactorAttr(),
                         getHighFreqFactorAttr(),
                         getOriginalMaxPositionsAttr())};
}

SmallVector<Value> CrossEntropyOp::buildVjp(OpBuilder &b, Location loc,
                                            ValueRange grads) {
  return {CrossEntropyGradOp::create(b, loc, getLogits().getType(), getLogits(),
                                     getTargets(), grads[0]),
          Value()};
}

//===----------------------------------------------------------------------===//
// Partitioned programs
//===----------------------------------------------------------------------===//

bool AllReduceOp::hasVjp() { return getReduction() == CollectiveReduction::sum; }

SmallVector<Value> AllReduceOp::buildVjp(OpBuilder &, Location,
                                         ValueRange grads) {
  return {grads[0]};
}

bool ReduceScatterOp::hasVjp() {
  return getReduction() == CollectiveReduction::sum;
}

SmallVector<Value> ReduceScatterOp::buildVjp(OpBuilder &b, Location loc,
                                             ValueRange grads) {
  return {AllGatherOp::create(b, loc, getInput().getType(), grads[0],
                              getAxisAttr())};
}

SmallVector<Value> AllGatherOp::buildVjp(OpBuilder &b, Location loc,
                                         ValueRange grads) {
  return {ReduceScatterOp::create(b, loc, getInput().getType(), grads[0],
                                  CollectiveReduction::sum, getAxisAttr())};
}

SmallVector<Value> GradAllReduceOp::buildVjp(OpBuilder &b, Location loc,
                                             ValueRange grads) {
  return {AllReduceOp::create(b, loc, grads[0].getType(), grads[0],
                              CollectiveReduction::sum, getAxisAttr())};
}

SmallVector<Value> StopGradientOp::buildVjp(OpBuilder &, Location, ValueRange) {
  return {Value()};
}

SmallVector<Value> ShardSliceOp::buildVjp(OpBuilder &b, Location loc,
                                          ValueRange grads) {
  return {ShardUnsliceOp::create(b, loc, getInput().getType(), grads[0],
                                 getIndex(), getDim(), getReplicas()),
          Value()};
}

SmallVector<Value> PickOp::buildVjp(OpBuilder &b, Location loc,
                                    ValueRange grads) {
  return {PickGradOp::create(b, loc, getInput().getType(), getIndices(),
                             grads[0], getOffset()),
          Value(), Value()};
}
