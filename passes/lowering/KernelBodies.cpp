// The loops of every tg op on memrefs. Elementwise, layout, max-reduction
// and matmul ops become linalg.generic / linalg.copy / linalg.fill, so that
// upstream tiling and vectorization apply to them later; row-wise ops (norms,
// softmax, losses), gathers and sums are scf loops over a flat view, which is
// what they are; flash attention, micro-kernels over blocks of rows, is in
// FlashAttentionBodies.cpp. Every sum accumulates in f64 and is rounded once
// (Emitter::wideSum), but for flash attention's inner products over the head
// dim and its sums of one tile, which are in the element type like the GEMMs
// they replace. Semantics match the reference kernels in compiler/evaluator.
#include "tg/Passes/KernelBodies.h"
#include "KernelEmitter.h"
#include "tg/Passes/StridedLayout.h"

#include "tg/IR/TgOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

namespace mlir::tg {
using namespace kernel_bodies;

namespace {

constexpr double kGeluTanhCoefficient = 0.044715;

/// What an op is comes from its traits (TgInterfaces.td), declared once in
/// its ODS definition; this file only holds each op's emitter.
bool isElementwise(Operation *op) {
  return op->hasTrait<TgOpTrait::Elementwise>();
}

/// An axis in [-rank, rank) as one in [0, rank).
int64_t normaliseAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Rows of a tensor along its last dim: (number of rows, row length).
std::pair<int64_t, int64_t> rowsOf(Value v) {
  auto type = cast<ShapedType>(v.getType());
  int64_t width = type.getRank() == 0 ? 1 : type.getShape().back();
  return {width == 0 ? 0 : type.getNumElements() / width, width};
}

/// Reads flat element `at` of an operand: a load, or a row group's prologue
/// computed there.
using ElementReader = llvm::function_ref<Value(Emitter &e, Value at)>;

/// Where a row gradient's elements dx(row, i) go: stored into dx's buffer,
/// or through a row group's epilogue (emitRowGroup).
using RowSink = llvm::function_ref<void(Value v, Value row, Value i)>;

//===----------------------------------------------------------------------===//
// Elementwise ops: one linalg.generic with broadcasting indexing maps.
//===----------------------------------------------------------------------===//

/// Reads an operand of shape `in` at the loop indices of `out` (numpy rules).
AffineMap broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                       MLIRContext *ctx) {
  size_t lead = out.size() - in.size();
  SmallVector<AffineExpr> exprs;
  for (size_t d = 0; d < in.size(); ++d)
    exprs.push_back(in[d] == 1 && out[lead + d] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(lead + d, ctx));
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

Value geluScalar(Emitter &e, Value x, bool tanh) {
  Value half = e.constant(0.5), one = e.constant(1.0);
  if (!tanh) {
    Value erf = math::ErfOp::create(e.b, e.loc, e.mul(x, e.constant(M_SQRT1_2)));
    return e.mul(e.mul(half, x), e.add(one, erf));
  }
  Value cube = e.mul(e.mul(x, x), x);
  Value inner = e.mul(e.constant(std::sqrt(2 / M_PI)),
                      e.add(x, e.mul(e.constant(kGeluTanhCoefficient), cube)));
  return e.mul(e.mul(half, x),
               e.add(one, math::TanhOp::create(e.b, e.loc, inner)));
}

Value geluDerivative(Emitter &e, Value x, bool tanh) {
  Value half = e.constant(0.5), one = e.constant(1.0);
  if (!tanh) {
    Value erf = math::ErfOp::create(e.b, e.loc, e.mul(x, e.constant(M_SQRT1_2)));
    Value pdf = e.mul(e.exp(e.mul(e.constant(-0.5), e.mul(x, x))),
                      e.constant(1 / std::sqrt(2 * M_PI)));
    return e.add(e.mul(half, e.add(one, erf)), e.mul(x, pdf));
  }
  Value c = e.constant(std::sqrt(2 / M_PI));
  Value x2 = e.mul(x, x);
  Value t = math::TanhOp::create(
      e.b, e.loc,
      e.mul(c, e.add(x, e.mul(e.constant(kGeluTanhCoefficient), e.mul(x2, x)))));
  Value sech2 = e.sub(one, e.mul(t, t));
  Value dInner =
      e.mul(c, e.add(one, e.mul(e.constant(3 * kGeluTanhCoefficient), x2)));
  return e.add(e.mul(half, e.add(one, t)),
               e.mul(e.mul(e.mul(half, x), sech2), dInner));
}

Value sigmoid(Emitter &e, Value x) {
  Value one = e.constant(1.0);
  return e.div(one, e.add(one, e.exp(arith::NegFOp::create(e.b, e.loc, x))));
}

/// The scalar computation of an elementwise op on one element of each operand,
/// or null for an op declaring Tg_Elementwise that has no case here.
Value elementwiseScalar(Emitter &e, Operation *op, ValueRange args) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return e.add(args[0], args[1]); })
      .Case([&](SubOp) { return e.sub(args[0], args[1]); })
      .Case([&](MulOp) { return e.mul(args[0], args[1]); })
      .Case([&](DivOp) { return e.div(args[0], args[1]); })
      .Case([&](MaxOp) { return e.max(args[0], args[1]); })
      .Case([&](MinOp) {
        return arith::MinimumFOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](PowOp) { return math::PowFOp::create(b, loc, args[0], args[1]); })
      .Case([&](NegOp) { return arith::NegFOp::create(b, loc, args[0]); })
      .Case([&](ExpOp) { return e.exp(args[0]); })
      .Case([&](LogOp) { return math::LogOp::create(b, loc, args[0]); })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, args[0]); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, args[0]); })
      .Case([&](RsqrtOp) { return e.reciprocalSqrt(args[0]); })
      .Case([&](CosOp) { return math::CosOp::create(b, loc, args[0]); })
      .Case([&](SinOp) { return math::SinOp::create(b, loc, args[0]); })
      .Case([&](SiluOp) { return e.mul(args[0], sigmoid(e, args[0])); })
      .Case([&](GeluOp o) {
        return geluScalar(e, args[0],
                          o.getApproximate() == GeluApproximation::tanh);
      })
      .Case([&](GeluGradOp o) {
        return e.mul(geluDerivative(e, args[0], o.getApproximate() ==
                                                    GeluApproximation::tanh),
                     args[1]);
      })
      .Case([&](SiluGradOp) {
        Value s = sigmoid(e, args[0]);
        Value one = e.constant(1.0);
        return e.mul(args[1],
                     e.mul(s, e.add(one, e.mul(args[0], e.sub(one, s)))));
      })
      .Case([&](CastOp) { return e.convert(args[0], e.element); })
      .Case([&](BroadcastOp) { return args[0]; })
      .Default([](Operation *) { return Value(); });
}

LogicalResult emitElementwise(OpBuilder &b, Location loc, Operation *op,
                              ValueRange operands, Value result) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> out = shapeOf(result);
  SmallVector<AffineMap> maps;
  for (Value in : operands)
    maps.push_back(broadcastMap(shapeOf(in), out, ctx));
  maps.push_back(AffineMap::getMultiDimIdentityMap(out.size(), ctx));
  SmallVector<utils::IteratorType> iterators(out.size(),
                                             utils::IteratorType::parallel);
  Type element = getElementTypeOrSelf(result.getType());
  bool known = true;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{}, operands, ValueRange{result}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Emitter e(nb, nloc, element);
        Value v = elementwiseScalar(e, op, args.drop_back());
        known = bool(v);
        linalg::YieldOp::create(nb, nloc, v ? v : args.back());
      });
  if (known)
    return success();
  generic.erase();
  return op->emitOpError("is declared Tg_Elementwise but the CPU lowering "
                         "has no scalar computation for it");
}

/// The scalar value of a splat tg.constant in `element`'s type.
Value splatScalar(Emitter &e, ConstantOp constant) {
  auto value = cast<DenseElementsAttr>(constant.getValue());
  Type element = value.getElementType();
  if (isa<FloatType>(element))
    return e.constant(element,
                      value.getSplatValue<APFloat>().convertToDouble());
  return arith::ConstantOp::create(
      e.b, e.loc, element,
      e.b.getIntegerAttr(element, value.getSplatValue<APInt>()));
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

void emitTranspose(OpBuilder &b, Location loc, TransposeOp op, Value input,
                   Value result) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> permutation = op.getPermutation();
  SmallVector<AffineExpr> exprs(permutation.size());
  for (auto [i, p] : llvm::enumerate(permutation))
    exprs[p] = getAffineDimExpr(i, ctx);
  AffineMap in = AffineMap::get(permutation.size(), 0, exprs, ctx);
  AffineMap out = AffineMap::getMultiDimIdentityMap(permutation.size(), ctx);
  SmallVector<utils::IteratorType> iterators(permutation.size(),
                                             utils::IteratorType::parallel);
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{input}, ValueRange{result},
      ArrayRef<AffineMap>{in, out}, iterators,
      [](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, args[0]);
      });
}

/// The window of `memref` at `offsets` with `sizes` (unit strides).
Value window(OpBuilder &b, Location loc, Value memref, ArrayRef<int64_t> offsets,
             ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> strides(offsets.size(), 1);
  return memref::SubViewOp::create(b, loc, memref, offsets, sizes, strides);
}

void copy(OpBuilder &b, Location loc, Value from, Value to) {
  linalg::CopyOp::create(b, loc, from, to);
}

void fillZero(OpBuilder &b, Location loc, Value memref) {
  Type element = getElementTypeOrSelf(memref.getType());
  Value zero = arith::ConstantOp::create(b, loc, element,
                                         b.getFloatAttr(element, 0.0));
  linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{memref});
}

//===----------------------------------------------------------------------===//
// Reductions and matmul
//===----------------------------------------------------------------------===//

/// A sum (or mean) over `axes` of `input`, not all of them, in f64 per
/// output element (Emitter::wideSum), rounded once: a bias gradient sums
/// thousands of rows into each column. The input's dims, size-1 ones
/// dropped, merge into groups of consecutive reduced or kept dims; a last
/// kept group is the contiguous inner block of the outputs, summed a block
/// of up to 32 columns at a time (as Emitter::columnSums; 32 rather than 16
/// halves the passes over a bias gradient's rows, 2x faster on the CPU), the
/// kept groups before it pick the output row. Each (output row, column
/// block) is one independent fold over the reduced elements. Without
/// `vectorRows` (a GPU) a column block is a thread's, of up to
/// Emitter::kThreadColumns (kThreadRowsAttr), as in Emitter::columnSums.
void emitPartialSum(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                    ElementReader read, Value result,
                    const llvm::SmallDenseSet<int64_t> &axes, int64_t count,
                    bool isMean, bool vectorRows) {
  struct Group {
    int64_t size, stride;
    bool reduced;
  };
  SmallVector<Group> groups;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d) {
    if (shape[d] == 1)
      continue; // its index is always 0
    bool reduced = axes.contains(d);
    if (!groups.empty() && groups.back().reduced == reduced)
      groups.back().size *= shape[d];
    else
      groups.push_back({shape[d], 0, reduced});
  }
  int64_t stride = 1;
  for (Group &g : llvm::reverse(groups)) {
    g.stride = stride;
    stride *= g.size;
  }
  int64_t inner = 1;
  if (!groups.empty() && !groups.back().reduced)
    inner = groups.pop_back_val().size;
  SmallVector<Group> outer, reduced;
  int64_t outputRows = 1;
  for (const Group &g : groups) {
    (g.reduced ? reduced : outer).push_back(g);
    if (!g.reduced)
      outputRows *= g.size;
  }
  // The element offset of a linear index over `gs` (last fastest).
  auto offsetOf = [](Emitter &e, Value linear, ArrayRef<Group> gs) {
    Value offset;
    for (auto [n, g] : llvm::enumerate(llvm::reverse(gs))) {
      bool outermost = n + 1 == gs.size();
      Value i = outermost ? linear : e.remIndex(linear, g.size);
      if (!outermost)
        linear = e.divIndex(linear, g.size);
      Value term = g.stride == 1 ? i : e.mulIndex(i, g.stride);
      offset = offset ? e.addIndex(offset, term) : term;
    }
    return offset ? offset : e.index(0);
  };

  Emitter e(b, loc, getElementTypeOrSelf(result.getType()));
  Value out = flatten(b, loc, result);
  int64_t w = Emitter::columnBlock(inner,
                                   vectorRows ? 32 : Emitter::kThreadColumns),
          blocks = inner / w;
  scf::ParallelOp tasks = e.rows(outputRows * blocks, [&](Value task) {
    Value row = blocks == 1 ? task : e.divIndex(task, blocks);
    Value first =
        blocks == 1 ? e.index(0) : e.mulIndex(e.remIndex(task, blocks), w);
    Value inFirst = e.addIndex(offsetOf(e, row, outer), first);
    Value outFirst = e.addIndex(e.mulIndex(row, inner), first);
    SmallVector<Value> sums = e.wideSums(
        count, w,
        [&](Value r) {
          Value at = e.addIndex(inFirst, offsetOf(e, r, reduced));
          SmallVector<Value> terms;
          for (int64_t j = 0; j < w; ++j)
            terms.push_back(read(e, e.addIndex(at, e.index(j))));
          return terms;
        },
        /*reassociate=*/inner == 1); // along contiguous reduced elements
    for (int64_t j = 0; j < w; ++j) {
      Value total = sums[j];
      if (isMean)
        total = e.div(total, e.constant(b.getF64Type(), (double)count));
      e.store(e.narrow(total), out, e.addIndex(outFirst, e.index(j)));
    }
  });
  if (!vectorRows && inner > 1)
    tasks->setAttr(kThreadRowsAttr, b.getUnitAttr());
}

/// reduce_sum or reduce_mean of an input of `shape` whose flat element `at`
/// is read(at), into `result`.
template <typename ReduceOpTy>
void emitSum(OpBuilder &b, Location loc, ReduceOpTy op, ArrayRef<int64_t> shape,
             ElementReader read, Value result, bool vectorRows) {
  llvm::SmallDenseSet<int64_t> axes = op.getReducedAxes();
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= shape[axis];
  bool isMean = isa<ReduceMeanOp>(op.getOperation());
  if (axes.size() != shape.size()) {
    emitPartialSum(b, loc, shape, read, result, axes, count, isMean,
                   vectorRows);
    return;
  }
  // A sum over every element (gradient norms, means of whole tensors):
  // accumulated in f64, rounded once.
  Emitter e(b, loc, getElementTypeOrSelf(result.getType()));
  Value total = e.wideSum(count, [&](Value i) { return read(e, i); });
  if (isMean)
    total = e.div(total, e.constant(b.getF64Type(), (double)count));
  e.store(e.narrow(total), flatten(b, loc, result), e.index(0));
}

template <typename ReduceOpTy>
void emitReduce(OpBuilder &b, Location loc, ReduceOpTy op, Value input,
                Value result, bool vectorRows) {
  ArrayRef<int64_t> shape = shapeOf(input);
  if (!isa<ReduceMaxOp>(op.getOperation())) {
    Value in = flatten(b, loc, input);
    emitSum(
        b, loc, op, shape, [&](Emitter &e, Value at) { return e.load(in, at); },
        result, vectorRows);
    return;
  }
  // A max needs no care for rounding: one linalg reduction.
  MLIRContext *ctx = b.getContext();
  llvm::SmallDenseSet<int64_t> axes = op.getReducedAxes();
  Type element = getElementTypeOrSelf(result.getType());
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < (int64_t)shape.size(); ++d) {
    bool reduced = axes.contains(d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      outExprs.push_back(getAffineDimExpr(d, ctx));
    else if (op.getKeepDims())
      outExprs.push_back(getAffineConstantExpr(0, ctx));
  }
  AffineMap in = AffineMap::getMultiDimIdentityMap(shape.size(), ctx);
  AffineMap out = AffineMap::get(shape.size(), 0, outExprs, ctx);
  Value init = arith::ConstantOp::create(
      b, loc, element,
      b.getFloatAttr(element, -std::numeric_limits<double>::infinity()));
  linalg::FillOp::create(b, loc, ValueRange{init}, ValueRange{result});
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{input}, ValueRange{result},
      ArrayRef<AffineMap>{in, out}, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value max = arith::MaximumFOp::create(nb, nloc, args[1], args[0]);
        linalg::YieldOp::create(nb, nloc, max);
      });
}

/// A loop-nest matmul (the alternative to a BLAS call): loops (batch.., i, k,
/// j) with j innermost, so the inner loop streams rows of rhs and result.
void emitMatmul(OpBuilder &b, Location loc, MatmulOp op, Value lhs, Value rhs,
                Value result) {
  MLIRContext *ctx = b.getContext();
  int64_t batchRank = shapeOf(result).size() - 2;
  int64_t loops = batchRank + 3;
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  AffineExpr i = d(batchRank), k = d(batchRank + 1), j = d(batchRank + 2);
  SmallVector<AffineExpr> batch, lhsExprs, rhsExprs, outExprs;
  for (int64_t x = 0; x < batchRank; ++x)
    batch.push_back(d(x));
  lhsExprs = batch;
  lhsExprs.append(op.getTransposeLhs() ? SmallVector<AffineExpr>{k, i}
                                       : SmallVector<AffineExpr>{i, k});
  if (shapeOf(rhs).size() > 2)
    rhsExprs = batch;
  rhsExprs.append(op.getTransposeRhs() ? SmallVector<AffineExpr>{j, k}
                                       : SmallVector<AffineExpr>{k, j});
  outExprs = batch;
  outExprs.append({i, j});
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  iterators[batchRank + 1] = utils::IteratorType::reduction;
  fillZero(b, loc, result);
  Type element = getElementTypeOrSelf(result.getType());
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{lhs, rhs}, ValueRange{result},
      ArrayRef<AffineMap>{AffineMap::get(loops, 0, lhsExprs, ctx),
                          AffineMap::get(loops, 0, rhsExprs, ctx),
                          AffineMap::get(loops, 0, outExprs, ctx)},
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Emitter e(nb, nloc, element);
        linalg::YieldOp::create(nb, nloc,
                                e.add(args[2], e.mul(args[0], args[1])));
      });
}

//===----------------------------------------------------------------------===//
// Row-wise ops on flat views
//===----------------------------------------------------------------------===//

/// Writes the softmax of a row, whose element i is x(i), into row `base` of
/// `out` (max subtracted first); returns the row's max and its sum of
/// exponentials. With `vectorRows` (the CPU) the max is found first, then
/// the exponentials are stored, then summed: one loop for both would run the
/// exponentials at the width of the f64 sum (half the float32 lanes). Without
/// (the CUDA target) the max and the sum are folded in one pass
/// (Emitter::maxAndSumExp), then x(i) and its exponential are computed again
/// as `out` is written once: a warp's row stays in L1 for its passes only
/// while nothing writes it, and the five passes over stored values of a GPT-2
/// attention softmax moved four times the bytes through L2; and the loss's
/// rows, 50,257 logits long, are read twice rather than three times. With
/// `scale`, each probability is multiplied by it (rounded) as it is written;
/// into an `out` of a narrower type (a fused cast) it is converted then, and
/// the exponentials are not stored.
std::pair<Value, Value> softmaxRow(Emitter &e, function_ref<Value(Value)> x,
                                   Value out, Value base, int64_t n,
                                   bool vectorRows, Value scale = nullptr) {
  Value max, sum;
  if (vectorRows)
    max = e.maxOf(n, x);
  else
    std::tie(max, sum) = e.maxAndSumExp(n, x);
  auto exponential = [&](Value i) { return e.exp(e.sub(x(i), max)); };
  auto scaled = [&](Value p) { return scale ? e.mul(p, scale) : p; };
  if (vectorRows &&
      cast<MemRefType>(out.getType()).getElementType() == max.getType()) {
    e.loop(n, [&](Value i) {
      e.store(exponential(i), out, e.addIndex(base, i));
    });
    sum = e.sum(n, [&](Value i) { return e.load(out, e.addIndex(base, i)); });
    e.loop(n, [&](Value i) {
      Value at = e.addIndex(base, i);
      e.store(scaled(e.div(e.load(out, at), sum)), out, at);
    });
  } else {
    if (vectorRows)
      sum = e.sum(n, exponential);
    // A probability a GPU writes to a 16-bit row (the loss's gradient in
    // bf16) may take the fast exponential and division, as 16-bit math does
    // (kForHalfFloatsAttr): their error, a few float32 ulps, cannot show
    // once rounded to 16 bits. The row's max and sum stay exact: the loss is
    // computed from them.
    bool halfOut =
        !vectorRows &&
        cast<MemRefType>(out.getType())
                .getElementType()
                .getIntOrFloatBitWidth() == 16 &&
        getElementTypeOrSelf(max.getType()).getIntOrFloatBitWidth() > 16;
    auto forHalfOut = [&](Value v) {
      if (halfOut)
        v.getDefiningOp()->setAttr(kForHalfFloatsAttr, e.b.getUnitAttr());
      return v;
    };
    e.loop(n, [&](Value i) {
      Value p = forHalfOut(e.div(forHalfOut(exponential(i)), sum));
      e.storeConverted(scaled(p), out, e.addIndex(base, i));
    });
  }
  return {max, sum};
}

/// softmaxRow of row `base` of `in`.
std::pair<Value, Value> softmaxRow(Emitter &e, Value in, Value out, Value base,
                                   int64_t n, bool vectorRows) {
  return softmaxRow(
      e, [&](Value i) { return e.load(in, e.addIndex(base, i)); }, out, base, n,
      vectorRows);
}

void emitSoftmax(Emitter &e, Value x, Value y, int64_t rows, int64_t n,
                 bool vectorRows) {
  e.rows(rows, [&](Value r) {
    softmaxRow(e, x, y, e.mulIndex(r, n), n, vectorRows);
  });
}

void emitSoftmaxGrad(Emitter &e, Value y, Value dy, int64_t rows, int64_t n,
                     RowSink dx) {
  e.rows(rows, [&](Value r) {
    Value base = e.mulIndex(r, n);
    Value dot = e.sum(n, [&](Value i) {
      Value at = e.addIndex(base, i);
      return e.mul(e.load(y, at), e.load(dy, at));
    });
    e.loop(n, [&](Value i) {
      Value at = e.addIndex(base, i);
      dx(e.mul(e.load(y, at), e.sub(e.load(dy, at), dot)), r, i);
    });
  });
}

/// Mean and 1/sqrt(var + eps) of a row (two passes, as the reference).
std::pair<Value, Value> layerNormStats(Emitter &e, Value x, Value base,
                                       int64_t n, double epsilon) {
  Value count = e.constant((double)n);
  Value mean = e.div(
      e.sum(n, [&](Value i) { return e.load(x, e.addIndex(base, i)); }), count);
  Value var = e.div(e.sum(n,
                          [&](Value i) {
                            Value c = e.sub(e.load(x, e.addIndex(base, i)), mean);
                            return e.mul(c, c);
                          }),
                    count);
  return {mean, e.reciprocalSqrt(e.add(var, e.constant(epsilon)))};
}

Value rmsRstd(Emitter &e, Value x, Value base, int64_t n, double epsilon) {
  Value sumSquares = e.sum(n, [&](Value i) {
    Value v = e.load(x, e.addIndex(base, i));
    return e.mul(v, v);
  });
  return e.reciprocalSqrt(
      e.add(e.div(sumSquares, e.constant((double)n)), e.constant(epsilon)));
}

/// Row `base` of layer_norm(x) into y.
void layerNormRow(Emitter &e, LayerNormOp op, Value x, Value w, Value bias,
                  Value y, Value base, int64_t n) {
  auto [mean, rstd] =
      layerNormStats(e, x, base, n, op.getEpsilon().convertToDouble());
  e.loop(n, [&, mean = mean, rstd = rstd](Value i) {
    Value at = e.addIndex(base, i);
    Value xhat = e.mul(e.sub(e.load(x, at), mean), rstd);
    e.store(e.add(e.mul(xhat, e.load(w, i)), e.load(bias, i)), y, at);
  });
}

/// A kernel-local buffer of `count` elements of the emitter's type: on the
/// CPU the heap, on CUDA a global of the kernel's (tg-cuda-map-kernels).
Value localBuffer(Emitter &e, int64_t count) {
  return memref::AllocOp::create(e.b, e.loc,
                                 MemRefType::get({count}, e.element));
}

/// A further sum over the rows that a norm gradient's column pass adds to
/// its own (a row group's column sum, isColumnSumOf): `input`'s rows (flat,
/// as the group stored them) summed into `output` (n elements).
struct ColumnSum {
  Value input, output;
};

/// A norm gradient's column pass: Emitter::columnSums of `outs`, whose terms
/// at (r, c) are terms(r, c, at) with `at` the flat index r * n + c, and of
/// `alsoSummed`'s rows.
template <typename Fn>
void normColumnSums(Emitter &e, int64_t rows, int64_t n,
                    SmallVector<Value> outs, ArrayRef<ColumnSum> alsoSummed,
                    bool vectorRows, Fn &&terms) {
  for (const ColumnSum &sum : alsoSummed)
    outs.push_back(sum.output);
  e.columnSums(rows, n, outs, vectorRows, [&](Value r, Value c) {
    Value at = e.addIndex(e.mulIndex(r, n), c);
    SmallVector<Value> all = terms(r, c, at);
    for (const ColumnSum &sum : alsoSummed)
      all.push_back(e.load(sum.input, at));
    return all;
  });
}

/// The weight and bias gradients sum over every row (thousands), after dx:
/// a row pass computes each row's mean and 1/std, keeps them in a local
/// buffer (2 values a row) and computes the row's dx over them; a column
/// pass then sums dy * xhat and dy into dw and db (xhat recomputed from x and
/// its row's statistics, as they were computed; f64, Emitter::columnSums).
/// Only the statistics are stored between the passes, not xhat (2 values a
/// row instead of n), and x is read by two passes, not three: the statistics
/// come from the row pass that needs them. The column pass also sums
/// `alsoSummed`.
void emitLayerNormGrad(Emitter &e, LayerNormGradOp op, Value x, Value w,
                       Value dy, Value dw, Value db, int64_t rows, int64_t n,
                       bool vectorRows, RowSink dx,
                       ArrayRef<ColumnSum> alsoSummed = {}) {
  double epsilon = op.getEpsilon().convertToDouble();
  Value stats = localBuffer(e, 2 * rows);
  auto xhatOf = [&](Value at, Value mean, Value rstd) {
    return e.mul(e.sub(e.load(x, at), mean), rstd);
  };
  Value count = e.constant((double)n);
  e.rows(rows, [&](Value r) {
    Value base = e.mulIndex(r, n);
    auto [mean, rstd] = layerNormStats(e, x, base, n, epsilon);
    Value statsAt = e.mulIndex(r, 2);
    e.store(mean, stats, statsAt);
    e.store(rstd, stats, e.addIndex(statsAt, e.index(1)));
    auto xhatAt = [&, mean = mean, rstd = rstd](Value at) {
      return xhatOf(at, mean, rstd);
    };
    // With g = dy * w: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    SmallVector<Value> sums = e.wideSums(n, 2, [&](Value i) {
      Value at = e.addIndex(base, i);
      Value g = e.mul(e.load(dy, at), e.load(w, i));
      return SmallVector<Value>{g, e.mul(g, xhatAt(at))};
    });
    Value meanG = e.div(e.narrow(sums[0]), count);
    Value meanGXhat = e.div(e.narrow(sums[1]), count);
    e.loop(n, [&, rstd = rstd](Value i) {
      Value at = e.addIndex(base, i);
      Value g = e.mul(e.load(dy, at), e.load(w, i));
      Value v = e.sub(e.sub(g, meanG), e.mul(xhatAt(at), meanGXhat));
      dx(e.mul(rstd, v), r, i);
    });
  });
  normColumnSums(
      e, rows, n, {dw, db}, alsoSummed, vectorRows,
      [&](Value r, Value, Value at) {
        Value statsAt = e.mulIndex(r, 2);
        Value mean = e.load(stats, statsAt);
        Value rstd = e.load(stats, e.addIndex(statsAt, e.index(1)));
        Value dyi = e.load(dy, at);
        return SmallVector<Value>{e.mul(dyi, xhatOf(at, mean, rstd)), dyi};
      });
  memref::DeallocOp::create(e.b, e.loc, stats);
}

/// Row `base` of rms_norm(x) into y.
void rmsNormRow(Emitter &e, RmsNormOp op, Value x, Value w, Value y,
                Value base, int64_t n) {
  Value rstd = rmsRstd(e, x, base, n, op.getEpsilon().convertToDouble());
  e.loop(n, [&](Value i) {
    Value at = e.addIndex(base, i);
    e.store(e.mul(e.mul(e.load(x, at), rstd), e.load(w, i)), y, at);
  });
}

/// As layer_norm_grad: a row pass keeps each row's rstd in a local buffer
/// and computes dx over it, then a column pass sums dy * x * rstd into dw,
/// and `alsoSummed`.
void emitRmsNormGrad(Emitter &e, RmsNormGradOp op, Value x, Value w, Value dy,
                     Value dw, int64_t rows, int64_t n, bool vectorRows,
                     RowSink dx, ArrayRef<ColumnSum> alsoSummed = {}) {
  double epsilon = op.getEpsilon().convertToDouble();
  Value rstds = localBuffer(e, rows);
  e.rows(rows, [&](Value r) {
    Value base = e.mulIndex(r, n);
    Value rstd = rmsRstd(e, x, base, n, epsilon);
    e.store(rstd, rstds, r);
    // With g = dy * w: dx = rstd * g - rstd^3 * x * mean(g * x).
    Value sumGX = e.sum(n, [&](Value i) {
      Value at = e.addIndex(base, i);
      return e.mul(e.mul(e.load(dy, at), e.load(w, i)), e.load(x, at));
    });
    Value meanGX = e.div(sumGX, e.constant((double)n));
    Value rstd3 = e.mul(e.mul(rstd, rstd), rstd);
    e.loop(n, [&](Value i) {
      Value at = e.addIndex(base, i);
      Value g = e.mul(e.load(dy, at), e.load(w, i));
      dx(e.sub(e.mul(rstd, g), e.mul(e.mul(rstd3, e.load(x, at)), meanGX)), r,
         i);
    });
  });
  normColumnSums(e, rows, n, {dw}, alsoSummed, vectorRows,
                 [&](Value r, Value, Value at) {
                   Value xhat = e.mul(e.load(x, at), e.load(rstds, r));
                   return SmallVector<Value>{e.mul(e.load(dy, at), xhat)};
                 });
  memref::DeallocOp::create(e.b, e.loc, rstds);
}

/// One row's loss: log(sum of exp(x - max)) + max - x[target].
Value rowLoss(Emitter &e, function_ref<Value(Value)> x, Value targets, Value r,
              Value max, Value sum) {
  Value picked = x(e.toIndex(e.load(targets, r)));
  return e.sub(e.add(max, math::LogOp::create(e.b, e.loc, sum)), picked);
}

/// The mean of the rows' losses (each term(r)), summed in f64 in row order.
void storeMeanLoss(Emitter &e, int64_t rows, Value loss,
                   llvm::function_ref<Value(Value)> term) {
  Value total = e.wideSums(
      rows, 1, [&](Value r) { return SmallVector<Value>{term(r)}; },
      /*reassociate=*/false)[0];
  e.store(e.narrow(e.div(total, e.constant(e.b.getF64Type(), (double)rows))),
          loss, e.index(0));
}

/// The mean loss over the rows: each row's loss in a row loop (a warp or a
/// block a row on a GPU, the threads' rows on the CPU), kept in a local
/// buffer, then summed (storeMeanLoss, as the loss with its gradient does). A row's max and sum of exponentials take two passes with
/// `vectorRows` (the CPU), else one (Emitter::maxAndSumExp).
void emitCrossEntropy(Emitter &e, Value logits, Value targets, Value loss,
                      int64_t rows, int64_t vocab, bool vectorRows) {
  Value rowLosses = localBuffer(e, rows);
  e.rows(rows, [&](Value r) {
    Value base = e.mulIndex(r, vocab);
    auto x = [&](Value i) { return e.load(logits, e.addIndex(base, i)); };
    Value max, sum;
    if (vectorRows) {
      max = e.maxOf(vocab, x);
      sum = e.sum(vocab, [&](Value i) { return e.exp(e.sub(x(i), max)); });
    } else {
      std::tie(max, sum) = e.maxAndSumExp(vocab, x);
    }
    e.store(rowLoss(e, x, targets, r, max, sum), rowLosses, r);
  });
  storeMeanLoss(e, rows, loss, [&](Value r) { return e.load(rowLosses, r); });
  memref::DeallocOp::create(e.b, e.loc, rowLosses);
}

/// The gradient of the mean loss, (p - onehot(target)) x lossGrad / rows,
/// each probability scaled as the softmax writes it and the target's
/// element written again from its probability (computed by the same ops:
/// the same bits); with `rowLosses`, each row's loss too (the forward and
/// the gradient in one pass over the logits). `logit(r, i)` is logit i of
/// row r in the element type (a fused cast's prologue converts it there, a
/// fused slice's reads it from a longer row); `dx` may be narrower (a fused
/// cast's epilogue), its rows `dxStride` apart, their elements past `vocab`
/// zeros (a fused pad's epilogue).
void emitCrossEntropyGrad(Emitter &e, function_ref<Value(Value, Value)> logit,
                          Value targets, Value lossGrad, Value dx, int64_t dxStride,
                          int64_t rows, int64_t vocab, bool vectorRows,
                          Value rowLosses = nullptr) {
  Value factor = e.div(lossGrad, e.constant((double)rows));
  e.rows(rows, [&](Value r) {
    Value base = e.mulIndex(r, dxStride);
    auto x = [&](Value i) { return logit(r, i); };
    auto [max, sum] = softmaxRow(e, x, dx, base, vocab, vectorRows, factor);
    if (rowLosses)
      e.store(rowLoss(e, x, targets, r, max, sum), rowLosses, r);
    Value target = e.toIndex(e.load(targets, r));
    Value p = e.div(e.exp(e.sub(x(target), max)), sum);
    e.storeConverted(e.mul(e.sub(p, e.constant(1.0)), factor), dx, e.addIndex(base, target));
    Value padding = e.addIndex(base, e.index(vocab));
    e.loop(dxStride - vocab, [&](Value i) {
      e.storeConverted(e.constant(0.0), dx, e.addIndex(padding, i));
    });
  });
}

/// The row (or column) `index` - `offset` of a share of `count` rows, and
/// whether it lies in the share; clamped to 0 outside it, so that loads stay
/// in bounds (the caller selects zeros there). Without an offset every
/// index is in range (the verifiers and the reference check that).
std::pair<Value, Value> shareIndex(Emitter &e, Value index, Value offset,
                                   int64_t count) {
  Value i = e.toIndex(index);
  if (!offset)
    return {i, arith::ConstantIntOp::create(e.b, e.loc, 1, 1)};
  Value local = arith::SubIOp::create(e.b, e.loc, i,
                                      e.toIndex(e.load(offset, e.index(0))));
  // Unsigned: a negative local index is out of range too.
  Value inRange = arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::ult,
                                        local, e.index(count));
  return {arith::SelectOp::create(e.b, e.loc, inRange, local, e.index(0)),
          inRange};
}

Value zeroOutside(Emitter &e, Value inRange, Value v) {
  return arith::SelectOp::create(e.b, e.loc, inRange, v,
                                 e.constant(v.getType(), 0.0));
}

void emitEmbedding(Emitter &e, Value table, Value indices, Value offset,
                   Value out, int64_t count, int64_t vocab, int64_t dim) {
  e.rows(count, [&](Value p) {
    auto [index, inRange] = shareIndex(e, e.load(indices, p), offset, vocab);
    Value row = e.mulIndex(index, dim);
    Value outRow = e.mulIndex(p, dim);
    e.loop(dim, [&](Value d) {
      e.store(zeroOutside(e, inRange, e.load(table, e.addIndex(row, d))), out,
              e.addIndex(outRow, d));
    });
  });
}

/// The embedding's gradient: row v of the table sums the gradient rows of
/// the tokens with index v, in token order. `tasks` row tasks each take a
/// span of consecutive vocabulary rows and scan every token for them (in
/// order: kInOrderAttr), adding the rows of those in the span, so the tasks
/// run in parallel and every sum is the one a single pass over the tokens
/// makes. Tokens outside the rank's share of the vocabulary add nothing.
/// The scan goes a block of `scanBlock` tokens at a time: a fold counts the
/// block's tokens in the span, then each of them in turn is found by a fold
/// (the least position in the span after the last one found) and its row
/// added. Folds spread over a GPU team's lanes, so a warp tests its block's
/// tokens side by side instead of one after another (the scan of 8,192
/// tokens one at a time took 0.82 ms of a GPT-2-medium step on an H200,
/// docs/perf.md); positions and counts are folded as f64 (exact below 2^53),
/// the type of the folds a team combines.
void emitEmbeddingGrad(Emitter &e, Value indices, Value grad, Value offset,
                       Value table, int64_t count, int64_t vocab, int64_t dim,
                       int64_t tasks, int64_t scanBlock) {
  fillZero(e.b, e.loc, table);
  int64_t span = llvm::divideCeil(vocab, std::min(tasks, vocab));
  Type wide = e.b.getF64Type();
  auto asWide = [&](Value i) {
    return arith::SIToFPOp::create(
        e.b, e.loc, wide,
        arith::IndexCastOp::create(e.b, e.loc, e.b.getI64Type(), i));
  };
  auto fromWide = [&](Value v) {
    return arith::IndexCastOp::create(
        e.b, e.loc, e.b.getIndexType(),
        arith::FPToSIOp::create(e.b, e.loc, e.b.getI64Type(), v));
  };
  e.rows(llvm::divideCeil(vocab, span), [&](Value task) {
    Value first = e.mulIndex(task, span);
    // The token at `p`'s row in the table, and whether it is in the span.
    auto tokenRow = [&](Value p) {
      auto [index, inRange] = shareIndex(e, e.load(indices, p), offset, vocab);
      // Unsigned: rows before the span are out of it too.
      Value inSpan = arith::AndIOp::create(
          e.b, e.loc, inRange,
          arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::ult,
                                arith::SubIOp::create(e.b, e.loc, index, first),
                                e.index(span)));
      return std::pair{index, inSpan};
    };
    Value none = e.constant(wide, std::numeric_limits<double>::infinity());
    scf::ForOp blocks =
        e.loop(llvm::divideCeil(count, scanBlock), [&](Value block) {
          Value lo = e.mulIndex(block, scanBlock);
          Value hi =
              e.minIndex(e.addIndex(lo, e.index(scanBlock)), e.index(count));
          Value found = e.foldRange(
              lo, hi, {e.constant(wide, 0.0)}, [&](Value p, ValueRange acc) {
                Value inSpan = tokenRow(p).second;
                Value one = arith::SelectOp::create(e.b, e.loc, inSpan,
                                                    e.constant(wide, 1.0),
                                                    e.constant(wide, 0.0));
                return SmallVector<Value>{e.add(acc[0], one)};
              })[0];
          Value afterLast = e.foldRange(
              e.index(0), fromWide(found), {lo}, [&](Value, ValueRange from) {
                Value at = e.foldRange(
                    from[0], hi, {none}, [&](Value p, ValueRange acc) {
                      Value position = arith::SelectOp::create(
                          e.b, e.loc, tokenRow(p).second, asWide(p), none);
                      return SmallVector<Value>{arith::MinimumFOp::create(
                          e.b, e.loc, acc[0], position)};
                    })[0];
                Value p = fromWide(at);
                Value row = e.mulIndex(tokenRow(p).first, dim);
                Value gradRow = e.mulIndex(p, dim);
                e.loop(dim, [&](Value d) {
                  Value to = e.addIndex(row, d);
                  e.store(e.add(e.load(table, to),
                                e.load(grad, e.addIndex(gradRow, d))),
                          table, to);
                });
                return SmallVector<Value>{e.addIndex(p, e.index(1))};
              })[0];
          afterLast.getDefiningOp()->setAttr(kInOrderAttr, e.b.getUnitAttr());
        });
    blocks->setAttr(kInOrderAttr, e.b.getUnitAttr());
  });
}

void emitPick(Emitter &e, Value x, Value indices, Value offset, Value out,
              int64_t rows, int64_t vocab) {
  e.rows(rows, [&](Value r) {
    auto [column, inRange] = shareIndex(e, e.load(indices, r), offset, vocab);
    Value at = e.addIndex(e.mulIndex(r, vocab), column);
    e.store(zeroOutside(e, inRange, e.load(x, at)), out, r);
  });
}

void emitPickGrad(Emitter &e, Value indices, Value grad, Value offset,
                  Value dx, int64_t rows, int64_t vocab) {
  fillZero(e.b, e.loc, dx);
  // Out of range, the clamped column 0 of the row gets 0: it is 0 already.
  e.rows(rows, [&](Value r) {
    auto [column, inRange] = shareIndex(e, e.load(indices, r), offset, vocab);
    e.store(zeroOutside(e, inRange, e.load(grad, r)), dx,
            e.addIndex(e.mulIndex(r, vocab), column));
  });
}

/// Copies between a whole tensor and the rank's block of it along `dim`
/// (flat views): block = index[0] / replicas. `toBlock` reads the whole
/// tensor into the block (tg.shard_slice); otherwise the block is written
/// into the zero-filled whole tensor (tg.shard_unslice).
void emitShardCopy(Emitter &e, Value whole, Value block, Value rankIndex,
                   ArrayRef<int64_t> wholeShape, int64_t dim, int64_t blockSize,
                   int64_t replicas, bool toBlock) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= wholeShape[i];
  for (size_t i = dim + 1; i < wholeShape.size(); ++i)
    inner *= wholeShape[i];
  int64_t span = blockSize * inner, wholeSpan = wholeShape[dim] * inner;
  Value blockIndex = arith::DivUIOp::create(
      e.b, e.loc, e.toIndex(e.load(rankIndex, e.index(0))), e.index(replicas));
  Value start = e.mulIndex(blockIndex, span);
  if (!toBlock)
    fillZero(e.b, e.loc, whole);
  e.rows(outer, [&](Value o) {
    Value wholeBase = e.addIndex(e.mulIndex(o, wholeSpan), start);
    Value blockBase = e.mulIndex(o, span);
    e.loop(span, [&](Value j) {
      Value w = e.addIndex(wholeBase, j), b = e.addIndex(blockBase, j);
      if (toBlock)
        e.store(e.load(whole, w), block, b);
      else
        e.store(e.load(block, b), whole, w);
    });
  });
}

/// The frequency of pair `i` (an index) under the scaling of `rope`, in
/// f64, as RopeFrequencies::frequency computes it: theta^(-2i/D), then
/// f / factor (linear) or Llama 3's wavelength bands. With a constant `i` it
/// folds to a constant.
Value ropeFrequency(Emitter &e, const RopeFrequencies &rope, Value i,
                    int64_t dim) {
  Type f64 = e.b.getF64Type();
  auto c = [&](double v) { return e.constant(f64, v); };
  Value index = arith::IndexCastOp::create(e.b, e.loc, e.b.getI64Type(), i);
  Value exponent = e.mul(arith::SIToFPOp::create(e.b, e.loc, f64, index),
                         c(-2.0 / dim));
  Value f = math::PowFOp::create(e.b, e.loc, c(rope.theta), exponent);
  if (!rope.scalingFactor)
    return f;
  Value scaled = e.div(f, c(*rope.scalingFactor));
  if (!rope.lowFreqFactor)
    return scaled;
  double low = *rope.lowFreqFactor, high = *rope.highFreqFactor;
  double context = *rope.originalMaxPositions;
  Value wavelength = e.div(c(2 * M_PI), f);
  Value smooth = e.div(e.sub(e.div(c(context), wavelength), c(low)),
                       c(high - low));
  Value middle = e.add(e.mul(e.sub(c(1.0), smooth), scaled), e.mul(smooth, f));
  auto compare = [&](arith::CmpFPredicate predicate, Value x, double bound) {
    return arith::CmpFOp::create(e.b, e.loc, predicate, x, c(bound));
  };
  Value result = arith::SelectOp::create(
      e.b, e.loc, compare(arith::CmpFPredicate::OLT, wavelength, context / high),
      f, middle);
  return arith::SelectOp::create(
      e.b, e.loc, compare(arith::CmpFPredicate::OGT, wavelength, context / low),
      scaled, result);
}

/// The cosine and sine of pair i's angle at `position` (f64), computed in
/// f64 as the reference does, then rounded (the angle negated: `inverse`).
std::pair<Value, Value> ropeRotation(Emitter &e, const RopeFrequencies &rope,
                                     bool inverse, Value position, Value i,
                                     int64_t dim) {
  Type f64 = e.b.getF64Type();
  Value angle = e.mul(e.mul(position, ropeFrequency(e, rope, i, dim)),
                      e.constant(f64, inverse ? -1.0 : 1.0));
  return {e.narrow(math::CosOp::create(e.b, e.loc, angle)),
          e.narrow(math::SinOp::create(e.b, e.loc, angle))};
}

} // namespace

namespace kernel_bodies {

Value ropePosition(Emitter &e, Value t) {
  return arith::SIToFPOp::create(
      e.b, e.loc, e.b.getF64Type(),
      arith::IndexCastOp::create(e.b, e.loc, e.b.getI64Type(), t));
}

std::pair<Value, Value> ropeRowRotation(Emitter &e, const RopeFrequencies &rope,
                                        bool inverse, Value position,
                                        int64_t dim) {
  int64_t half = dim / 2;
  SmallVector<Value> cosines, sines;
  for (int64_t i = 0; i < half; ++i) {
    auto [c, s] = ropeRotation(e, rope, inverse, position, e.index(i), dim);
    cosines.push_back(c);
    sines.push_back(s);
  }
  auto halfType = VectorType::get({half}, e.element);
  return {vector::FromElementsOp::create(e.b, e.loc, halfType, cosines),
          vector::FromElementsOp::create(e.b, e.loc, halfType, sines)};
}

Value rotateRow(Emitter &e, Value x, Value c, Value s) {
  int64_t dim = cast<VectorType>(x.getType()).getNumElements(), half = dim / 2;
  Value x1 = e.lanes(x, x, 0, half), x2 = e.lanes(x, x, half, dim);
  Value y1 = e.sub(e.mul(x1, c), e.mul(x2, s));
  Value y2 = e.add(e.mul(x2, c), e.mul(x1, s));
  return e.lanes(y1, y2, 0, dim);
}

} // namespace kernel_bodies

namespace {

/// Rotates pairs (i, i + D/2) at position t by t * f_i: a row loop over the
/// positions. With `vectorRows` (a row runs on one thread: the CPU), a
/// position's D/2 cosines and sines are computed once and every plane's row
/// at that position is rotated with them as one vector of D elements.
/// Otherwise (the CUDA target spreads a row's loops over a warp's lanes, and
/// holding every pair's rotation would take a thread's registers) one loop
/// step per pair i, its rotation then every plane's pair. On the CPU that
/// order came back to each row once per pair, and with planes 16 KiB apart
/// their lines share L1 sets and were evicted in between: a 2-layer Llama at
/// T = 128 (128 planes) spent 12.4-13.0 ms a step in its 8 rope kernels,
/// 1.3-2.3 with vector rows (tgrun --profile, 2 threads). x and y are flat
/// views of [B, H, T, D], or of its [B, T, H, D] transpose where
/// `tokensIn` / `tokensOut` (the heads' transposes fused into the kernel).
void emitRope(Emitter &e, RopeOp op, Value x, Value y, bool vectorRows,
              bool tokensIn, bool tokensOut) {
  auto type = cast<ShapedType>(op.getInput().getType());
  int64_t heads = type.getDimSize(1);
  int64_t seq = type.getDimSize(2), dim = type.getDimSize(3), half = dim / 2;
  int64_t planes = seq * dim == 0 ? 0 : type.getNumElements() / (seq * dim);
  if (half == 0)
    return;
  RopeFrequencies rope = op.getFrequencies();
  // The first element of plane p's row t (p = b * H + h).
  auto rowOf = [&](Value p, Value t, bool tokens) {
    if (!tokens)
      return e.mulIndex(e.addIndex(e.mulIndex(p, seq), t), dim);
    Value b = e.divIndex(p, heads), h = e.remIndex(p, heads);
    Value token = e.addIndex(e.mulIndex(b, seq), t);
    return e.mulIndex(e.addIndex(e.mulIndex(token, heads), h), dim);
  };
  if (!vectorRows) {
    e.rows(seq, [&](Value t) {
      Value position = ropePosition(e, t);
      e.loop(half, [&](Value i) {
        auto [c, s] = ropeRotation(e, rope, op.getInverse(), position, i, dim);
        e.loop(planes, [&](Value p) {
          Value in = e.addIndex(rowOf(p, t, tokensIn), i);
          Value out = e.addIndex(rowOf(p, t, tokensOut), i);
          Value x1 = e.load(x, in);
          Value x2 = e.load(x, e.addIndex(in, e.index(half)));
          e.store(e.sub(e.mul(x1, c), e.mul(x2, s)), y, out);
          e.store(e.add(e.mul(x2, c), e.mul(x1, s)), y,
                  e.addIndex(out, e.index(half)));
        });
      });
    });
    return;
  }
  auto rowType = VectorType::get({dim}, e.element);
  e.rows(seq, [&](Value t) {
    auto [c, s] =
        ropeRowRotation(e, rope, op.getInverse(), ropePosition(e, t), dim);
    e.loop(planes, [&](Value p) {
      Value v = vector::LoadOp::create(e.b, e.loc, rowType, x,
                                       ValueRange{rowOf(p, t, tokensIn)});
      vector::StoreOp::create(e.b, e.loc, rotateRow(e, v, c, s), y,
                              ValueRange{rowOf(p, t, tokensOut)});
    });
  });
}

} // namespace

/// The value of `op`, an elementwise op or a splat constant of a group, on
/// one element of each of its operands; null for an elementwise op without
/// a scalar computation.
static Value groupScalar(OpBuilder &b, Operation &op, ValueRange operands) {
  Emitter e(b, op.getLoc(), getElementTypeOrSelf(op.getResult(0).getType()));
  if (auto constant = dyn_cast<ConstantOp>(op))
    return splatScalar(e, constant);
  return elementwiseScalar(e, &op, operands);
}

std::optional<ArrayRef<int64_t>> elementwiseGroupShape(Block &body) {
  std::optional<ArrayRef<int64_t>> space;
  for (Operation &op : body.without_terminator()) {
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value || !value.isSplat() ||
          cast<ShapedType>(value.getType()).getRank() != 0)
        return std::nullopt;
      continue;
    }
    if (!isElementwise(&op))
      return std::nullopt;
    for (Value result : op.getResults()) {
      if (!space)
        space = shapeOf(result);
      else if (*space != shapeOf(result))
        return std::nullopt;
    }
  }
  return space;
}

LogicalResult emitElementwiseGroup(OpBuilder &b, Block &body,
                                   ValueRange inputs, ValueRange yielded,
                                   ValueRange outputs) {
  std::optional<ArrayRef<int64_t>> space = elementwiseGroupShape(body);
  assert(space && "emitElementwiseGroup on a block that is not a group");
  MLIRContext *ctx = b.getContext();
  Location loc = body.getParentOp()->getLoc();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(shapeOf(in), *space, ctx));
  for (size_t i = 0; i < outputs.size(); ++i)
    maps.push_back(AffineMap::getMultiDimIdentityMap(space->size(), ctx));
  SmallVector<utils::IteratorType> iterators(space->size(),
                                             utils::IteratorType::parallel);
  Operation *unknown = nullptr;
  linalg::GenericOp::create(
      b, loc, TypeRange{}, inputs, outputs, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping scalars;
        scalars.map(body.getArguments(), args.take_front(inputs.size()));
        for (Operation &op : body.without_terminator()) {
          SmallVector<Value> operands;
          for (Value operand : op.getOperands())
            operands.push_back(scalars.lookup(operand));
          Value v = groupScalar(nb, op, operands);
          if (!v) {
            unknown = &op;
            v = args.back();
          }
          scalars.map(op.getResult(0), v);
        }
        SmallVector<Value> results;
        for (Value value : yielded)
          results.push_back(scalars.lookup(value));
        linalg::YieldOp::create(nb, nloc, results);
      });
  if (unknown)
    return unknown->emitOpError("is declared Tg_Elementwise but the CPU "
                                "lowering has no scalar computation for it");
  return success();
}

bool takesRowPrologue(Operation *op) {
  return isa<LayerNormOp, RmsNormOp, SoftmaxOp>(op) || isSum(op);
}

bool isSum(Operation *op) { return isa<ReduceSumOp, ReduceMeanOp>(op); }

bool takesRowEpilogue(Operation *op) {
  return isa<LayerNormGradOp, RmsNormGradOp, SoftmaxGradOp>(op);
}

bool isColumnSumOf(Operation *op, Operation *rowOp) {
  auto sum = dyn_cast<ReduceSumOp>(op);
  if (!sum || !isa<LayerNormGradOp, RmsNormGradOp>(rowOp))
    return false;
  // Rows of a rank-1 space are one row: no columns to sum, and the weight
  // and bias gradients would have the row's shape.
  ArrayRef<int64_t> space = shapeOf(rowOp->getOperand(0));
  if (space.size() < 2)
    return false;
  llvm::SmallDenseSet<int64_t> axes = sum.getReducedAxes();
  for (int64_t d = 0; d < (int64_t)space.size(); ++d)
    if (axes.contains(d) != (d + 1 < (int64_t)space.size()))
      return false;
  return shapeOf(sum.getInput()) == space &&
         getElementTypeOrSelf(sum.getType()) ==
             getElementTypeOrSelf(rowOp->getResult(0).getType());
}

Operation *rowGroupOp(Block &body) {
  Operation *rowOp = nullptr;
  for (Operation &op : body.without_terminator())
    if (!isElementwise(&op) && !isa<ConstantOp>(op)) {
      if (rowOp && isColumnSumOf(&op, rowOp))
        continue;
      if (rowOp || !(takesRowPrologue(&op) || takesRowEpilogue(&op)))
        return nullptr;
      rowOp = &op;
    }
  if (!rowOp)
    return nullptr;
  bool prologue = takesRowPrologue(rowOp);
  ArrayRef<int64_t> space = shapeOf(rowOp->getOperand(0));
  bool any = false;
  Operation *terminator = body.getTerminator();
  for (Operation &op : body.without_terminator()) {
    if (&op == rowOp)
      continue;
    if (isColumnSumOf(&op, rowOp)) {
      // Its rows are read back from where the group stores them, and its
      // sums are complete only after the last row.
      Value rowsSummed = op.getOperand(0);
      if (rowsSummed.getParentBlock() != &body ||
          !llvm::is_contained(terminator->getOperands(), rowsSummed) ||
          llvm::any_of(op.getResult(0).getUsers(),
                       [&](Operation *user) { return user != terminator; }))
        return nullptr;
      any = true;
      continue;
    }
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value || !value.isSplat() ||
          cast<ShapedType>(value.getType()).getRank() != 0)
        return nullptr;
      continue;
    }
    if (shapeOf(op.getResult(0)) != space ||
        op.isBeforeInBlock(rowOp) != prologue)
      return nullptr;
    // An epilogue reads dx only: the weight and bias gradients are sums
    // over every row.
    if (!prologue && llvm::any_of(op.getOperands(), [&](Value v) {
          return v.getDefiningOp() == rowOp && v != rowOp->getResult(0);
        }))
      return nullptr;
    any = true;
  }
  // A prologue computes the row input, and nothing else the row op reads.
  for (auto [k, operand] : llvm::enumerate(rowOp->getOperands()))
    if (Operation *def = operand.getDefiningOp();
        def && def->getBlock() == &body && (!prologue || k != 0))
      return nullptr;
  if (prologue && !rowOp->getOperand(0).getDefiningOp())
    return nullptr;
  return any ? rowOp : nullptr;
}

namespace {

/// An element of a row group's iteration space: element `column` of row
/// `row`, or flat index `flat`; what is missing is derived when needed.
struct Position {
  Value row, column, flat;

  Value flatIndex(Emitter &e, int64_t n) {
    if (!flat)
      flat = e.addIndex(e.mulIndex(row, n), column);
    return flat;
  }
  void rowAndColumn(Emitter &e, int64_t n) {
    if (!row) {
      row = e.divIndex(flat, n);
      column = e.remIndex(flat, n);
    }
  }
};

/// The flat position of element `at` of `space` in an operand of shape
/// `in`, broadcast to `space` by numpy rules.
Value broadcastIndex(Emitter &e, ArrayRef<int64_t> in, ArrayRef<int64_t> space,
                     Position &at) {
  int64_t n = space.empty() ? 1 : space.back();
  if (in == space)
    return at.flatIndex(e, n);
  if (in.empty())
    return e.index(0);
  at.rowAndColumn(e, n);
  size_t lead = space.size() - in.size();
  Value offset = in.back() == 1 ? e.index(0) : at.column;
  int64_t stride = in.back();
  Value rest = at.row;
  for (int64_t d = (int64_t)space.size() - 2; d >= 0; --d) {
    Value index = d == 0 ? rest : e.remIndex(rest, space[d]);
    if (d > 0)
      rest = e.divIndex(rest, space[d]);
    if (d < (int64_t)lead)
      break;
    int64_t extent = in[d - lead];
    if (extent != 1)
      offset = e.addIndex(offset, e.mulIndex(index, stride));
    stride *= extent;
  }
  return offset;
}

/// Emits a row group (rowGroupOp): one row loop; each row computes its
/// prologue and keeps it in the row input's buffer for the row op, or hands
/// each dx element of the row op to the epilogue as it is computed.
class RowGroup {
public:
  RowGroup(OpBuilder &b, Block &body, ValueRange inputs, ValueRange yielded,
           ValueRange outputs, bool vectorRows)
      : b(b), body(body), rowOp(rowGroupOp(body)), vectorRows(vectorRows),
        space(shapeOf(rowOp->getOperand(0))),
        e(b, rowOp->getLoc(), getElementTypeOrSelf(rowOp->getResult(0).getType())),
        buffers(b, rowOp->getLoc(), body, inputs, yielded, outputs),
        yielded(yielded) {
    std::tie(rows, n) = rowsOf(rowOp->getOperand(0));
  }

  LogicalResult emit() {
    // The buffers the row op reads and writes, before the loops; its row
    // input (prologue) or dx (epilogue) may have none (see below).
    bool prologue = takesRowPrologue(rowOp);
    for (Value v : rowOp->getOperands().drop_front(prologue ? 1 : 0))
      buffers.get(v);
    for (Value v : rowOp->getResults().drop_front(prologue ? 0 : 1))
      buffers.get(v);
    for (Operation &op : body.without_terminator())
      if (isColumnSumOf(&op, rowOp))
        columnSums.push_back(
            {buffers.lookup(op.getOperand(0)), buffers.get(op.getResult(0))});
    if (isSum(rowOp))
      emitSumWithPrologue();
    else if (prologue)
      emitWithPrologue();
    else
      emitWithEpilogue();
    buffers.free();
    if (unknown)
      return unknown->emitOpError("is declared Tg_Elementwise but the CPU "
                                  "lowering has no scalar computation for it");
    if (unstored)
      return unstored->emitOpError(
          "is yielded by a sum's prologue, which stores nothing: only values "
          "the sum alone reads may be fused into it");
    return success();
  }

private:
  /// Row by row: the prologue's values of the row, stored where they are
  /// yielded (the row input x, if not, in the row op's result row, which
  /// the row op then overwrites element by element), then the row op.
  void emitWithPrologue() {
    Value x = rowOp->getOperand(0);
    Value xRows = buffers.lookup(x);
    if (!xRows)
      xRows = buffers.get(rowOp->getResult(0));
    // A softmax whose prologue yields nothing computes its row on the fly in
    // each of its two passes where it stores no exponentials (softmaxRow).
    bool onTheFly = isa<SoftmaxOp>(rowOp) && !vectorRows &&
                    llvm::all_of(yielded, [&](Value v) {
                      return v.getDefiningOp() == rowOp;
                    });
    e.rows(rows, [&](Value r) {
      Value base = e.mulIndex(r, n);
      if (onTheFly) {
        softmaxRow(
            e,
            [&](Value i) {
              IRMapping scalars;
              computeElement({r, i, e.addIndex(base, i)}, scalars);
              return scalars.lookup(x);
            },
            buffers.get(rowOp->getResult(0)), base, n, /*vectorRows=*/false);
        return;
      }
      e.loop(n, [&](Value i) {
        IRMapping scalars;
        computeElement({r, i, e.addIndex(base, i)}, scalars);
        Value at = e.addIndex(base, i);
        storeYielded(scalars, at);
        if (!buffers.lookup(x))
          e.store(scalars.lookup(x), xRows, at);
      });
      llvm::TypeSwitch<Operation *>(rowOp)
          .Case([&](LayerNormOp op) {
            layerNormRow(e, op, xRows, buffers.get(op.getWeight()),
                         buffers.get(op.getBias()), buffers.get(op.getResult()),
                         base, n);
          })
          .Case([&](RmsNormOp op) {
            rmsNormRow(e, op, xRows, buffers.get(op.getWeight()),
                       buffers.get(op.getResult()), base, n);
          })
          .Case([&](SoftmaxOp op) {
            softmaxRow(e, xRows, buffers.get(op.getResult()), base, n,
                       vectorRows);
          });
    });
  }

  /// A sum reading each element of its input, once, as the prologue
  /// computes it; nothing else of the prologue is yielded (tg-fuse-into-rows
  /// fuses only values the sum alone reads).
  void emitSumWithPrologue() {
    Value x = rowOp->getOperand(0);
    for (Value v : yielded)
      if (v.getDefiningOp() != rowOp)
        unstored = v.getDefiningOp();
    auto read = [&](Emitter &, Value at) {
      IRMapping scalars;
      computeElement({nullptr, nullptr, at}, scalars);
      return scalars.lookup(x);
    };
    Value result = buffers.get(rowOp->getResult(0));
    if (auto sum = dyn_cast<ReduceSumOp>(rowOp))
      emitSum(b, e.loc, sum, space, read, result, vectorRows);
    else
      emitSum(b, e.loc, cast<ReduceMeanOp>(rowOp), space, read, result,
              vectorRows);
  }

  /// The row op with each dx element going through the epilogue, which
  /// stores what is yielded (dx itself only if it is).
  void emitWithEpilogue() {
    Value dx = rowOp->getResult(0);
    auto epilogue = [&](Value v, Value r, Value i) {
      IRMapping scalars;
      scalars.map(dx, v);
      Position at{r, i, nullptr};
      computeElement(at, scalars);
      storeYielded(scalars, at.flatIndex(e, n));
    };
    auto operand = [&](unsigned k) { return buffers.get(rowOp->getOperand(k)); };
    llvm::TypeSwitch<Operation *>(rowOp)
        .Case([&](LayerNormGradOp op) {
          emitLayerNormGrad(e, op, operand(0), operand(1), operand(2),
                            buffers.get(op.getResult(1)),
                            buffers.get(op.getResult(2)), rows, n, vectorRows,
                            epilogue, columnSums);
        })
        .Case([&](RmsNormGradOp op) {
          emitRmsNormGrad(e, op, operand(0), operand(1), operand(2),
                          buffers.get(op.getResult(1)), rows, n, vectorRows,
                          epilogue, columnSums);
        })
        .Case([&](SoftmaxGradOp) {
          emitSoftmaxGrad(e, operand(0), operand(1), rows, n, epilogue);
        });
  }

  /// The elementwise ops' values at element i of row r, in `scalars`
  /// (which holds dx for an epilogue); block arguments are read from their
  /// buffers at their broadcast position.
  void computeElement(Position at, IRMapping &scalars) {
    for (Operation &op : body.without_terminator()) {
      if (&op == rowOp || scalars.contains(op.getResult(0)) ||
          isColumnSumOf(&op, rowOp))
        continue;
      if (!isa<ConstantOp>(op) &&
          takesRowPrologue(rowOp) != op.isBeforeInBlock(rowOp))
        continue;
      SmallVector<Value> operands;
      for (Value operand : op.getOperands())
        operands.push_back(
            scalars.contains(operand)
                ? scalars.lookup(operand)
                : e.load(buffers.lookup(operand),
                         broadcastIndex(e, shapeOf(operand), space, at)));
      Value v = groupScalar(b, op, operands);
      if (!v) {
        unknown = &op;
        v = e.constant(0.0);
      }
      scalars.map(op.getResult(0), v);
    }
  }

  /// Stores the yielded values among `scalars` at flat position `at`.
  void storeYielded(IRMapping &scalars, Value at) {
    for (Value v : yielded)
      if (scalars.contains(v))
        e.store(scalars.lookup(v), buffers.lookup(v), at);
  }

  OpBuilder &b;
  Block &body;
  Operation *rowOp;
  bool vectorRows;
  ArrayRef<int64_t> space;
  Emitter e;
  FlatBuffers buffers;
  ValueRange yielded;
  SmallVector<ColumnSum> columnSums; // the group's, for the column pass
  int64_t rows = 0, n = 0;
  Operation *unknown = nullptr;
  Operation *unstored = nullptr;
};

} // namespace

LogicalResult emitRowGroup(OpBuilder &b, Block &body, ValueRange inputs,
                           ValueRange yielded, ValueRange outputs,
                           bool vectorRows) {
  assert(rowGroupOp(body) && "emitRowGroup on a block that is not a group");
  return RowGroup(b, body, inputs, yielded, outputs, vectorRows).emit();
}

bool isRowSlice(Operation *op) {
  auto slice = dyn_cast_or_null<SliceOp>(op);
  if (!slice)
    return false;
  ArrayRef<int64_t> from = shapeOf(slice.getInput()), to = shapeOf(slice.getResult());
  return llvm::all_of(slice.getOffsets(), [](int64_t o) { return o == 0; }) &&
         from.drop_back() == to.drop_back();
}
bool isRowPad(Operation *op) {
  auto pad = dyn_cast_or_null<PadOp>(op);
  return pad && llvm::all_of(pad.getLow(), [](int64_t l) { return l == 0; }) &&
         llvm::all_of(pad.getHigh().drop_back(), [](int64_t h) { return h == 0; });
}
bool isWideningCast(Operation *op) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  auto from = cast ? dyn_cast<FloatType>(getElementTypeOrSelf(cast.getInput().getType())) : nullptr;
  return from && from.getWidth() < getElementTypeOrSelf(cast.getType()).getIntOrFloatBitWidth();
}
bool isNarrowingCast(Operation *op) {
  auto cast = dyn_cast_or_null<CastOp>(op);
  return cast && getElementTypeOrSelf(cast.getType()).getIntOrFloatBitWidth() <
                     getElementTypeOrSelf(cast.getInput().getType()).getIntOrFloatBitWidth();
}

LossGradientChain lossWithGradient(Block &body) {
  // Beside the pair, only the gradient's seed may be in it (compiled in),
  // and before it the slice and cast the logits come through, after it the
  // cast and pad the gradient goes through, each the only reader of what
  // the op before it computes.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (auto constant = dyn_cast<ConstantOp>(op);
        !constant || cast<ShapedType>(constant.getType()).getRank() != 0)
      ops.push_back(&op);
  ArrayRef<Operation *> rest(ops);
  LossGradientChain chain;
  auto take = [&](bool front, auto matches) -> Operation * {
    if (rest.empty() || !matches(front ? rest.front() : rest.back()))
      return nullptr;
    Operation *op = front ? rest.front() : rest.back();
    rest = front ? rest.drop_front() : rest.drop_back();
    return op;
  };
  chain.slice = take(true, isRowSlice);
  chain.widen = take(true, isWideningCast);
  chain.pad = take(false, isRowPad);
  chain.narrow = take(false, isNarrowingCast);
  if (rest.size() != 2)
    return {};
  auto loss = dyn_cast<CrossEntropyOp>(rest[0]);
  auto grad = dyn_cast<CrossEntropyGradOp>(rest[1]);
  if (!loss || !grad || loss.getLogits() != grad.getLogits() ||
      loss.getTargets() != grad.getTargets())
    return {};
  // Each link computes what the next reads, and nothing else reads it.
  Value logits = grad.getLogits();
  SmallVector<Operation *, 2> readers{loss, grad};
  for (Operation *op : {chain.widen, chain.slice}) {
    if (!op)
      continue;
    if (op->getResult(0) != logits || !llvm::all_of(logits.getUsers(), [&](Operation *user) {
          return llvm::is_contained(readers, user);
        }))
      return {};
    readers = {op};
    logits = op->getOperand(0);
  }
  Value gradient = grad.getResult();
  for (Operation *op : {chain.narrow, chain.pad}) {
    if (!op)
      continue;
    if (op->getOperand(0) != gradient || !gradient.hasOneUse())
      return {};
    gradient = op->getResult(0);
  }
  chain.grad = grad;
  return chain;
}

LogicalResult emitLossWithGradient(OpBuilder &b, Block &body, ValueRange inputs,
                                   ValueRange yielded, ValueRange outputs,
                                   bool vectorRows) {
  LossGradientChain chain = lossWithGradient(body);
  assert(chain && "emitLossWithGradient on a block that is not the pair");
  auto grad = cast<CrossEntropyGradOp>(chain.grad);
  auto loss = *body.getOps<CrossEntropyOp>().begin();
  Location loc = grad.getLoc();
  FlatBuffers buffers(b, loc, body, inputs, yielded, outputs);
  auto [rows, vocab] = rowsOf(grad.getLogits());
  Emitter e(b, loc, getElementTypeOrSelf(grad.getType()));
  // Each row's loss, kept until the rows are summed in order.
  Value rowLosses = buffers.local(MemRefType::get({rows}, e.element));
  // The logits read where the slice and the cast before the pair read
  // them (each logit converted as it is read), the gradient written where
  // the cast and the pad after it write theirs: no intermediate is stored.
  Value source = grad.getLogits();
  for (Operation *op : {chain.widen, chain.slice})
    if (op)
      source = op->getOperand(0);
  Value result = grad.getResult();
  for (Operation *op : {chain.narrow, chain.pad})
    if (op)
      result = op->getResult(0);
  Value logits = buffers.get(source), targets = buffers.get(grad.getTargets());
  int64_t stride = shapeOf(source).back();
  auto logit = [&](Value r, Value i) {
    return e.convert(e.load(logits, e.addIndex(e.mulIndex(r, stride), i)), e.element);
  };
  // The loss's gradient: an input, or the constant seed compiled in.
  Value lossGrad;
  if (auto seed = grad.getLossGrad().getDefiningOp<ConstantOp>())
    lossGrad = splatScalar(e, seed);
  else
    lossGrad = e.load(buffers.get(grad.getLossGrad()), e.index(0));
  emitCrossEntropyGrad(e, logit, targets, lossGrad, buffers.get(result),
                       /*dxStride=*/shapeOf(result).back(), rows, vocab, vectorRows, rowLosses);
  storeMeanLoss(e, rows, buffers.get(loss.getResult()),
                [&](Value r) { return e.load(rowLosses, r); });
  buffers.free();
  return success();
}

bool isHeadsTranspose(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  return transpose &&
         transpose.getPermutation() == ArrayRef<int64_t>{0, 2, 1, 3};
}

RopeOp ropeGroup(Block &body) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  auto rope = llvm::find_if(ops, [](Operation *op) { return isa<RopeOp>(op); });
  if (rope == ops.end() || ops.size() < 2 || ops.size() > 3)
    return nullptr;
  size_t at = rope - ops.begin();
  // At most one transpose before it, feeding it, and one after, reading it;
  // neither's result (nor the rope's, with one after) used otherwise.
  auto feedsOnly = [](Operation *from, Operation *to) {
    return from->getResult(0).hasOneUse() &&
           *from->getResult(0).getUsers().begin() == to;
  };
  if (at > 1 || (at == 1 && !(isHeadsTranspose(ops[0]) &&
                              feedsOnly(ops[0], *rope))))
    return nullptr;
  if (at + 1 < ops.size() &&
      (at + 2 != ops.size() || !isHeadsTranspose(ops[at + 1]) ||
       !feedsOnly(*rope, ops[at + 1])))
    return nullptr;
  return cast<RopeOp>(*rope);
}

LogicalResult emitRopeGroup(OpBuilder &b, Block &body, ValueRange inputs,
                            ValueRange yielded, ValueRange outputs,
                            bool vectorRows) {
  RopeOp rope = ropeGroup(body);
  assert(rope && "emitRopeGroup on a block that is not a rope group");
  Operation *before = rope.getInput().getDefiningOp();
  Operation *after =
      rope->hasOneUse() ? *rope->getUsers().begin() : nullptr;
  bool tokensIn = isHeadsTranspose(before);
  bool tokensOut = isHeadsTranspose(after) && after->getBlock() == &body;
  Value x = tokensIn ? before->getOperand(0) : rope.getInput();
  Value y = tokensOut ? after->getResult(0) : Value(rope.getResult());
  if (yielded.size() != 1 || yielded[0] != y || !isa<BlockArgument>(x))
    return rope.emitOpError("a rope kernel with the heads' transposes takes "
                            "one input and yields one result");
  Emitter e(b, rope.getLoc(), getElementTypeOrSelf(rope.getType()));
  FlatBuffers buffers(b, rope.getLoc(), body, inputs, yielded, outputs);
  emitRope(e, rope, buffers.get(x), buffers.get(y), vectorRows, tokensIn,
           tokensOut);
  return success();
}

bool hasKernelBody(Operation *op) {
  return op->hasTrait<TgOpTrait::HasKernelBody>();
}

std::pair<Value, Value> combineMaxSumExp(OpBuilder &b, Location loc, Value m1,
                                         Value s1, Value m2, Value s2) {
  auto constant = [&](Type type, double v) {
    return createScalarOrSplatConstant(
        b, loc, type, b.getFloatAttr(getElementTypeOrSelf(type), v).getValue());
  };
  Value max1 = m1, max2 = m2;
  Value larger2 =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, m2, m1);
  Value same = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m1, m2);
  // The scale in f32 at least: a bf16 one (2^-9) would round the running
  // sum again at every new maximum.
  Type scaleType = m1.getType();
  bool widened = getElementTypeOrSelf(scaleType).getIntOrFloatBitWidth() < 32;
  if (widened) {
    scaleType = isa<VectorType>(scaleType)
                    ? Type(cast<VectorType>(scaleType).clone(b.getF32Type()))
                    : Type(b.getF32Type());
    m1 = arith::ExtFOp::create(b, loc, scaleType, m1);
    m2 = arith::ExtFOp::create(b, loc, scaleType, m2);
  }
  Value gap =
      math::AbsFOp::create(b, loc, arith::SubFOp::create(b, loc, m1, m2));
  auto exp = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gap));
  if (widened) // the exponential the 16-bit row's sum pass took
    exp->setAttr(kForHalfFloatsAttr, b.getUnitAttr());
  Value scale =
      arith::SelectOp::create(b, loc, same, constant(scaleType, 1.0), exp);
  if (scale.getType() != s1.getType())
    scale = arith::ExtFOp::create(b, loc, s1.getType(), scale);
  // m2 larger: s1 counts relative to m1, so it shrinks; else s2 does. A
  // null s2 is one element's: 1.
  Value sumIf2 =
      arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, s1, scale),
                            s2 ? s2 : constant(s1.getType(), 1.0));
  Value sumIf1 = arith::AddFOp::create(
      b, loc, s1, s2 ? arith::MulFOp::create(b, loc, s2, scale) : scale);
  return {arith::MaximumFOp::create(b, loc, max1, max2),
          arith::SelectOp::create(b, loc, larger2, sumIf2, sumIf1)};
}

LogicalResult emitKernelBody(OpBuilder &b, Operation *op, ValueRange operands,
                             ValueRange results, bool vectorRows) {
  Location loc = op->getLoc();
  if (!hasKernelBody(op))
    return op->emitOpError("has no CPU kernel lowering (run "
                           "tg-decompose-attention before lowering attention)");
  if (isElementwise(op))
    return emitElementwise(b, loc, op, operands, results[0]);
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    emitTranspose(b, loc, transpose, operands[0], results[0]);
    return success();
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    copy(b, loc, window(b, loc, operands[0], slice.getOffsets(), slice.getSizes()),
         results[0]);
    return success();
  }
  if (auto pad = dyn_cast<PadOp>(op)) {
    // Zeros only where the input does not land (each padded dim's low and
    // high slabs; a corner is zeroed twice): the result is written once.
    ArrayRef<int64_t> full = shapeOf(results[0]);
    for (auto [d, low, high] : llvm::enumerate(pad.getLow(), pad.getHigh()))
      for (auto [start, size] : {std::pair{int64_t(0), low},
                                 std::pair{full[d] - high, high}}) {
        if (size == 0)
          continue;
        SmallVector<int64_t> offsets(full.size(), 0), sizes(full);
        offsets[d] = start;
        sizes[d] = size;
        fillZero(b, loc, window(b, loc, results[0], offsets, sizes));
      }
    copy(b, loc, operands[0],
         window(b, loc, results[0], pad.getLow(), shapeOf(operands[0])));
    return success();
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    SmallVector<int64_t> offsets(shapeOf(results[0]).size(), 0);
    int64_t axis = normaliseAxis((int64_t)concat.getAxis(), offsets.size());
    for (Value input : operands) {
      copy(b, loc, input, window(b, loc, results[0], offsets, shapeOf(input)));
      offsets[axis] += shapeOf(input)[axis];
    }
    return success();
  }
  if (auto r = dyn_cast<ReduceSumOp>(op)) {
    emitReduce(b, loc, r, operands[0], results[0], vectorRows);
    return success();
  }
  if (auto r = dyn_cast<ReduceMeanOp>(op)) {
    emitReduce(b, loc, r, operands[0], results[0], vectorRows);
    return success();
  }
  if (auto r = dyn_cast<ReduceMaxOp>(op)) {
    emitReduce(b, loc, r, operands[0], results[0], vectorRows);
    return success();
  }
  if (auto matmul = dyn_cast<MatmulOp>(op)) {
    emitMatmul(b, loc, matmul, operands[0], operands[1], results[0]);
    return success();
  }

  // Row-wise ops: flat views, rows along the last dim of the first operand.
  SmallVector<Value> in, out;
  for (Value v : operands)
    in.push_back(flatten(b, loc, v));
  for (Value v : results)
    out.push_back(flatten(b, loc, v));
  auto [rows, n] = rowsOf(operands[0]);
  Emitter e(b, loc, getElementTypeOrSelf(results[0].getType()));
  // A row gradient's dx, element i of row r, into its buffer.
  auto intoDx = [&](Value v, Value r, Value i) {
    e.store(v, out[0], e.addIndex(e.mulIndex(r, n), i));
  };
  bool known = true;
  LogicalResult emitted = success();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](SoftmaxOp) {
        emitSoftmax(e, in[0], out[0], rows, n, vectorRows);
      })
      .Case([&](SoftmaxGradOp) {
        emitSoftmaxGrad(e, in[0], in[1], rows, n, intoDx);
      })
      .Case([&](LayerNormOp o) {
        e.rows(rows, [&](Value r) {
          layerNormRow(e, o, in[0], in[1], in[2], out[0], e.mulIndex(r, n), n);
        });
      })
      .Case([&](LayerNormGradOp o) {
        emitLayerNormGrad(e, o, in[0], in[1], in[2], out[1], out[2], rows, n,
                          vectorRows, intoDx);
      })
      .Case([&](RmsNormOp o) {
        e.rows(rows, [&](Value r) {
          rmsNormRow(e, o, in[0], in[1], out[0], e.mulIndex(r, n), n);
        });
      })
      .Case([&](RmsNormGradOp o) {
        emitRmsNormGrad(e, o, in[0], in[1], in[2], out[1], rows, n, vectorRows,
                        intoDx);
      })
      .Case([&](CrossEntropyOp) {
        emitCrossEntropy(e, in[0], in[1], out[0], rows, n, vectorRows);
      })
      .Case([&](CrossEntropyGradOp) {
        emitCrossEntropyGrad(e,
                             [&](Value r, Value i) {
                               return e.load(in[0], e.addIndex(e.mulIndex(r, n), i));
                             },
                             in[1], e.load(in[2], e.index(0)), out[0], /*dxStride=*/n,
                             rows, n, vectorRows);
      })
      .Case([&](EmbeddingOp o) {
        auto table = shapeOf(operands[0]);
        emitEmbedding(e, in[0], in[1], o.getOffset() ? in[2] : Value(), out[0],
                      cast<ShapedType>(operands[1].getType()).getNumElements(),
                      table[0], table[1]);
      })
      .Case([&](EmbeddingGradOp o) {
        auto table = shapeOf(results[0]);
        // Each task scans every token: a few tasks a thread on the CPU, in
        // short blocks (a thread folds a block's tokens one by one, again for
        // each token found); on a GPU a warp each, enough of them to fill it,
        // in blocks of 8 tokens a lane.
        emitEmbeddingGrad(
            e, in[0], in[1], o.getOffset() ? in[2] : Value(), out[0],
            cast<ShapedType>(operands[0].getType()).getNumElements(), table[0],
            table[1], /*tasks=*/vectorRows ? 64 : 1024,
            /*scanBlock=*/vectorRows ? 16 : 256);
      })
      .Case([&](PickOp o) {
        emitPick(e, in[0], in[1], o.getOffset() ? in[2] : Value(), out[0], rows,
                 n);
      })
      .Case([&](PickGradOp o) {
        auto [gradRows, vocab] = rowsOf(results[0]);
        emitPickGrad(e, in[0], in[1], o.getOffset() ? in[2] : Value(), out[0],
                     gradRows, vocab);
      })
      .Case([&](ShardSliceOp o) {
        emitShardCopy(e, in[0], out[0], in[1], shapeOf(operands[0]), o.getDim(),
                      shapeOf(results[0])[o.getDim()], o.getReplicas(),
                      /*toBlock=*/true);
      })
      .Case([&](ShardUnsliceOp o) {
        emitShardCopy(e, out[0], in[0], in[1], shapeOf(results[0]), o.getDim(),
                      shapeOf(operands[0])[o.getDim()], o.getReplicas(),
                      /*toBlock=*/false);
      })
      .Case([&](RopeOp o) {
        emitRope(e, o, in[0], out[0], vectorRows, /*tokensIn=*/false,
                 /*tokensOut=*/false);
      })
      .Case<FlashAttentionOp, FlashAttentionGradOp>([&](Operation *o) {
        SmallVector<FlashPlace> places;
        for (auto [flat, buffer] : llvm::zip_equal(
                 llvm::concat<Value>(in, out),
                 llvm::concat<Value>(operands, results)))
          places.push_back({flat, StridedLayout::packed(buffer)});
        emitted = emitFlashAttention(e, o, places);
      })
      .Default([&](Operation *) { known = false; });
  if (!known)
    return op->emitOpError("is declared Tg_HasKernelBody but the CPU lowering "
                           "has no emitter for it");
  return emitted;
}

} // namespace mlir::tg
