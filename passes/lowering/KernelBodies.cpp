// The loops of every tg op on memrefs. Elementwise, layout, max-reduction
// and matmul ops become linalg.generic / linalg.copy / linalg.fill, so that
// upstream tiling and vectorization apply to them later; row-wise ops (norms,
// softmax, losses), gathers and sums are scf loops over a flat view, which is
// what they are; flash attention is micro-kernels over blocks of rows.
// Every sum accumulates in f64 and is rounded once (Emitter::wideSum), but
// for flash attention's inner products over the head dim and its sums of one
// tile, which are in the element type like the GEMMs they replace.
// Semantics match the reference kernels in compiler/evaluator.
#include "tg/Passes/KernelBodies.h"
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
namespace {

constexpr double kGeluTanhCoefficient = 0.044715;

/// What an op is comes from its traits (TgInterfaces.td), declared once in
/// its ODS definition; this file only holds each op's emitter.
bool isElementwise(Operation *op) {
  return op->hasTrait<TgOpTrait::Elementwise>();
}

/// Arithmetic and loop helpers at one insertion point, in one element type.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, Type element)
      : b(b), loc(loc), element(element) {}

  OpBuilder &b;
  Location loc;
  Type element;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value constant(double v) { return constant(element, v); }
  Value constant(Type type, double v) {
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  /// Lanes `positions` of vectors x and y laid end to end (a shuffle:
  /// LLVM's shufflevector on every target, where strided slices are not).
  Value shuffle(Value x, Value y, ArrayRef<int64_t> positions) {
    return vector::ShuffleOp::create(b, loc, x, y, positions);
  }
  /// Lanes [first, last) of vectors x and y laid end to end.
  Value lanes(Value x, Value y, int64_t first, int64_t last) {
    return shuffle(x, y, llvm::to_vector(llvm::seq<int64_t>(first, last)));
  }
  /// 1 / sqrt(x), as the reference computes it.
  Value reciprocalSqrt(Value x) {
    return div(constant(x.getType(), 1.0), math::SqrtOp::create(b, loc, x));
  }
  Value addIndex(Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y);
  }
  Value mulIndex(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  /// An integer tensor element (token id) as an index.
  Value toIndex(Value integer) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
  }

  /// Loads/stores element `i` of a flat view (rank 0 or 1).
  Value load(Value flat, Value i) {
    if (cast<MemRefType>(flat.getType()).getRank() == 0)
      return memref::LoadOp::create(b, loc, flat, ValueRange{});
    return memref::LoadOp::create(b, loc, flat, ValueRange{i});
  }
  void store(Value v, Value flat, Value i) {
    if (cast<MemRefType>(flat.getType()).getRank() == 0)
      memref::StoreOp::create(b, loc, v, flat, ValueRange{});
    else
      memref::StoreOp::create(b, loc, v, flat, ValueRange{i});
  }

  /// for (i = 0; i < n; ++i) body(i)
  template <typename Fn> scf::ForOp loop(int64_t n, Fn &&body) {
    return loopTo(index(n), std::forward<Fn>(body));
  }
  /// for (i = 0; i < n; ++i) body(i), n an index value.
  template <typename Fn> scf::ForOp loopTo(Value n, Fn &&body) {
    auto forOp = scf::ForOp::create(b, loc, index(0), n, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    body(forOp.getInductionVar());
    return forOp;
  }
  /// Folds body(i, accumulators) -> new accumulators over lo <= i < hi.
  template <typename Fn>
  SmallVector<Value> foldRange(Value lo, Value hi, ValueRange init, Fn &&body) {
    auto forOp = scf::ForOp::create(b, loc, lo, hi, index(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      // Without accumulators the builder has put in a yield; ours replaces it.
      if (init.empty())
        forOp.getBody()->getTerminator()->erase();
      b.setInsertionPointToEnd(forOp.getBody());
      SmallVector<Value> next =
          body(forOp.getInductionVar(), forOp.getRegionIterArgs());
      scf::YieldOp::create(b, loc, next);
    }
    return SmallVector<Value>(forOp.getResults());
  }
  Value minIndex(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value maxIndex(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  /// for each row r < n, in any order: body(r). The row loops of row-wise
  /// ops; a row's inner loops (`loop`, `fold`, `sum`) write element i of the
  /// row (or of a per-column operand) at their own index i only, and read
  /// nothing another iteration writes, which is what lets a GPU target spread
  /// a row over the lanes of a warp. (The "rows" of `columnSums` and of
  /// partial reductions are blocks of columns: their folds only read.)
  template <typename Fn> scf::ParallelOp rows(int64_t n, Fn &&body) {
    auto parallel = scf::ParallelOp::create(b, loc, ValueRange{index(0)},
                                            ValueRange{index(n)},
                                            ValueRange{index(1)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(parallel.getBody()->getTerminator());
    body(parallel.getInductionVars()[0]);
    return parallel;
  }
  /// Folds body(i, accumulators) -> new accumulators over i < n.
  template <typename Fn>
  SmallVector<Value> fold(int64_t n, ValueRange init, Fn &&body) {
    return foldRange(index(0), index(n), init, std::forward<Fn>(body));
  }
  /// Sums term(i) over i < n in f64, whatever the element type: a sum over
  /// many float32 values (a gradient's squares, the loss over the batch, a
  /// long row) keeps float64's accuracy, where a float32 accumulator drifts
  /// by up to ~n ulp. The adds may be reassociated so that LLVM vectorizes
  /// the loop (lanes of partial sums, in a fixed order: the result is
  /// deterministic). Returns the f64 sum; `narrow` rounds it once.
  template <typename Fn> Value wideSum(int64_t n, Fn &&term) {
    return wideSums(n, 1, [&](Value i) { return SmallVector<Value>{term(i)}; })
        [0];
  }
  /// `count` sums at once: terms(i) gives the i-th term of each. Without
  /// `reassociate` each sum is added in order: where terms(i) reads `count`
  /// neighbours of a strided row i (column sums), LLVM then vectorizes
  /// across the sums instead of gathering along i.
  template <typename Fn>
  SmallVector<Value> wideSums(int64_t n, int64_t count, Fn &&terms,
                              bool reassociate = true) {
    Type wide = b.getF64Type();
    SmallVector<Value> init(count, constant(wide, 0.0));
    auto flags = reassociate ? arith::FastMathFlags::reassoc
                             : arith::FastMathFlags::none;
    return fold(n, init, [&](Value i, ValueRange acc) {
      SmallVector<Value> next;
      for (auto [a, t] : llvm::zip_equal(acc, terms(i)))
        next.push_back(arith::AddFOp::create(b, loc, a, widen(t), flags));
      return next;
    });
  }
  /// Sums term(i) over i < n (accumulated in f64), in the element type.
  template <typename Fn> Value sum(int64_t n, Fn &&term) {
    return narrow(wideSum(n, term));
  }
  /// `v` in f64.
  Value widen(Value v) {
    Type wide = b.getF64Type();
    return v.getType() == wide ? v : arith::ExtFOp::create(b, loc, wide, v);
  }
  /// `v` in the element type.
  Value narrow(Value v) {
    return v.getType() == element ? v : arith::TruncFOp::create(b, loc, element, v);
  }
  /// `v` (a float or an integer) as float type `to`, as tg.cast converts.
  Value convert(Value v, Type to) {
    Type from = v.getType();
    if (from == to)
      return v;
    if (isa<IntegerType>(from))
      return arith::SIToFPOp::create(b, loc, to, v);
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  /// Stores `v` into element `i` of `flat`, converted to its element type (a
  /// fused cast's epilogue: rounded once, as the cast kernel would).
  void storeConverted(Value v, Value flat, Value i) {
    store(convert(v, cast<MemRefType>(flat.getType()).getElementType()), flat, i);
  }
  /// Per column c < width of a [height, width] layout, the sums over the
  /// rows of terms(r, c)[k] into outs[k][c], accumulated in f64 and rounded
  /// once. Columns go in blocks (columnBlock): one loop over the rows keeps
  /// a block's sums, reading each row's block contiguously, as vectors; the
  /// blocks are independent (`rows`). Without `vectorRows` (a GPU) a block
  /// is a thread's (kThreadColumns columns, marked kThreadRowsAttr), a
  /// warp's lanes on adjacent blocks.
  template <typename Fn>
  void columnSums(int64_t height, int64_t width, ArrayRef<Value> outs,
                  bool vectorRows, Fn &&terms) {
    int64_t w = columnBlock(width, vectorRows ? 16 : kThreadColumns),
            count = outs.size();
    scf::ParallelOp blocks = rows(width / w, [&](Value block) {
      Value first = mulIndex(block, w);
      SmallVector<Value> columns;
      for (int64_t j = 0; j < w; ++j)
        columns.push_back(addIndex(first, index(j)));
      SmallVector<Value> sums = wideSums(
          height, w * count,
          [&](Value r) {
            SmallVector<Value> all(w * count);
            for (int64_t j = 0; j < w; ++j) {
              SmallVector<Value> column = terms(r, columns[j]);
              for (int64_t k = 0; k < count; ++k)
                all[k * w + j] = column[k];
            }
            return all;
          },
          /*reassociate=*/w == 1);
      for (int64_t k = 0; k < count; ++k)
        for (int64_t j = 0; j < w; ++j)
          store(narrow(sums[k * w + j]), outs[k], columns[j]);
    });
    if (!vectorRows)
      blocks->setAttr(kThreadRowsAttr, b.getUnitAttr());
  }
  /// The columns a GPU thread sums together: 16 bytes of bf16, so that its
  /// loads of a row's columns become one vector (coalesceConsecutiveLoads).
  /// A thread a column loaded 2 bytes at a time, and the bias and norm
  /// gradients' column sums ran at 0.3-0.5 of the H200's copy bandwidth.
  static constexpr int64_t kThreadColumns = 8;
  /// The columns summed together by `columnSums`: `most` (16: 64 bytes of
  /// float32) or the largest power of two below that divides `width`.
  static int64_t columnBlock(int64_t width, int64_t most = 16) {
    int64_t w = most;
    while (width % w != 0)
      w /= 2;
    return w;
  }
  Value divIndex(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, index(y));
  }
  Value remIndex(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, index(y));
  }
  /// The max of x(i) over i < n.
  template <typename Fn> Value maxOf(int64_t n, Fn &&x) {
    return fold(n, {constant(-std::numeric_limits<double>::infinity())},
                [&](Value i, ValueRange acc) {
                  return SmallVector<Value>{max(acc[0], x(i))};
                })[0];
  }
  /// A row's maximum of x(i) over i < n and the sum of exp(x(i) - max),
  /// in one pass (kMaxSumExpAttr): a GPU's row then reads its elements once
  /// for both. Sequential in its iterations (no reassociation), so the CPU,
  /// whose vector units fold a maximum and then a sum fast, keeps maxOf and
  /// sum. The sum is in f64, as `sum`'s, and rounded to the element type.
  template <typename Fn>
  std::pair<Value, Value> maxAndSumExp(int64_t n, Fn &&x) {
    SmallVector<Value> folds =
        fold(n,
             {constant(-std::numeric_limits<double>::infinity()),
              constant(b.getF64Type(), 0.0)},
             [&](Value i, ValueRange acc) {
               auto [m, s] =
                   combineMaxSumExp(b, loc, acc[0], acc[1], x(i), nullptr);
               return SmallVector<Value>{m, s};
             });
    folds[0].getDefiningOp()->setAttr(kMaxSumExpAttr, b.getUnitAttr());
    return {folds[0], narrow(folds[1])};
  }
};

/// A rank-0 or rank-1 view of a contiguous memref.
Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() <= 1)
    return memref;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, loc, memref,
                                         ArrayRef<ReassociationIndices>{all});
}

/// An axis in [-rank, rank) as one in [0, rank).
int64_t normaliseAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
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

/// Position t (an index) in f64.
Value ropePosition(Emitter &e, Value t) {
  return arith::SIToFPOp::create(
      e.b, e.loc, e.b.getF64Type(),
      arith::IndexCastOp::create(e.b, e.loc, e.b.getI64Type(), t));
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

/// The cosines and sines of the D/2 pairs' angles at `position` (f64), as
/// two vectors of D/2 elements: the pairs' frequencies fold to constants.
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

/// Row `x` (a vector of D elements) rotated by the cosines `c` and sines
/// `s` of its pairs (vectors of D/2).
Value rotateRow(Emitter &e, Value x, Value c, Value s) {
  int64_t dim = cast<VectorType>(x.getType()).getNumElements(), half = dim / 2;
  Value x1 = e.lanes(x, x, 0, half), x2 = e.lanes(x, x, half, dim);
  Value y1 = e.sub(e.mul(x1, c), e.mul(x2, s));
  Value y2 = e.add(e.mul(x2, c), e.mul(x1, s));
  return e.lanes(y1, y2, 0, dim);
}

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

//===----------------------------------------------------------------------===//
// Flash attention
//===----------------------------------------------------------------------===//

/// Where the rows of a flash attention operand are in its flat buffer: row
/// (b, h, t) of a [B, H, T, D] operand starts at element offset +
/// b * batchStride + h * headStride + t * rowStride, its D elements
/// contiguous; a [B, H, T] operand (the log-sum-exp) has rows of one
/// element. Packed, or wherever the slices, reshapes and transposes of a
/// flash group put it (tg-fuse-attention-layouts: the projection's
/// [B, T, 3 x H x D] for q, k and v, the tokens' layout for o and dO).
struct FlashOperand {
  Value flat;
  int64_t offset = 0, batchStride, headStride, rowStride;

  /// `layout`, of shape [B, H, T, D] (elements contiguous) or [B, H, T],
  /// in `flat`, the flat view of its root; none for other strides.
  static std::optional<FlashOperand> of(Value flat,
                                        const StridedLayout &layout) {
    ArrayRef<int64_t> strides = layout.strides;
    if ((strides.size() != 3 && strides.size() != 4) ||
        (strides.size() == 4 && layout.shape[3] > 1 && strides[3] != 1))
      return std::nullopt;
    return FlashOperand{flat, layout.offset, strides[0], strides[1], strides[2]};
  }
};

/// The shapes and visibility rules of a flash attention op, and its kernels.
/// Query rows (q, o, dO, dq) are r = (b, h, t), key rows (k, v, dk, dv)
/// (b, hk, s); query head h reads key head h / group. Each task takes a block
/// of kLanes rows of one plane as the lanes of its vectors: query rows
/// forward, key rows in the gradient (one task a plane, its key blocks in
/// turn). Its own rows are transposed once into scratch on the stack (a
/// column of the block, one element per lane, for each of the D head-dim
/// elements), and the loops over the other rows go in tiles of a few
/// positions: a tile's scores are one vector per position, summed over the
/// head dim by D broadcast FMAs each (as a GEMM's micro-kernel does), and
/// the online softmax is lane-wise. Inner products over the head dim and the
/// sum of one tile's positions are in the element type (as the library GEMMs
/// they replace); the sums over tiles (the softmax denominator, the output
/// and the gradients) in f64, blockwise, in scratch.
struct FlashAttention {
  static constexpr int64_t kLanes = kFlashAttentionLanes;
  Emitter &e;
  int64_t batch, heads, kvHeads, queryLen, keyLen, dim, group;
  bool causal;
  int64_t window;
  double scale;
  Type wide, positionType;
  VectorType laneVector, wideLaneVector, positionVector;
  /// The rotary position embedding the op applies to its queries and keys,
  /// if any, and with it each position's cosines and sines of its D/2 pairs'
  /// angles ([positions, D/2] in the element type: ropeTables).
  std::optional<RopeFrequencies> rope;
  Value cosines, sines;

  template <typename OpTy>
  FlashAttention(Emitter &e, OpTy op)
      : e(e), causal(op.getCausal()), window(op.getWindow()),
        scale(op.getScale().convertToDouble()), wide(e.b.getF64Type()),
        positionType(e.b.getI64Type()), rope(op.getRope()) {
    ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey());
    batch = q[0], heads = q[1], queryLen = q[2], dim = q[3];
    kvHeads = k[1], keyLen = k[2], group = heads / kvHeads;
    laneVector = VectorType::get({kLanes}, e.element);
    wideLaneVector = VectorType::get({kLanes}, wide);
    positionVector = VectorType::get({kLanes}, positionType);
  }

  /// A task's rows: positions first + i of a plane, lane i < kLanes, the
  /// first `count` of them in range. Loads read position
  /// min(first + i, last) so that they stay in bounds.
  struct TaskRows {
    Value first, count, at;       // at: the lanes' positions, as i64
    SmallVector<Value> positions; // clamped, per lane
  };
  TaskRows taskRows(Value index, int64_t length) {
    TaskRows blk;
    blk.first = e.mulIndex(index, kLanes);
    blk.count = e.minIndex(
        e.index(kLanes),
        arith::SubIOp::create(e.b, e.loc, e.index(length), blk.first));
    Value last = e.index(length - 1);
    for (int64_t i = 0; i < kLanes; ++i)
      blk.positions.push_back(
          e.minIndex(e.addIndex(blk.first, e.index(i)), last));
    SmallVector<int64_t> offsets =
        llvm::to_vector(llvm::seq<int64_t>(0, kLanes));
    Value first =
        arith::IndexCastOp::create(e.b, e.loc, positionType, blk.first);
    blk.at = arith::AddIOp::create(
        e.b, e.loc, splat(first, positionVector),
        arith::ConstantOp::create(
            e.b, e.loc,
            DenseElementsAttr::get(positionVector, ArrayRef(offsets))));
    return blk;
  }
  int64_t blocks(int64_t length) { return llvm::divideCeil(length, kLanes); }

  /// One tile: the positions start + j (j < width) clamped into
  /// [start, end) so that every load stays in bounds, and whether each is
  /// before `end` (the others are masked out of every sum).
  struct Tile {
    SmallVector<Value> positions, valid; // index, i1
  };
  /// Folds body(tile, accumulators) over the tiles covering [first, end):
  /// the whole tiles in a loop, whose positions are start + j and all
  /// valid (the body's loads are then at fixed offsets from one row), then
  /// the rest, if any, as one tile whose positions from `end` on are
  /// clamped to end - 1 and masked out.
  template <typename Fn>
  SmallVector<Value> foldTiles(Value first, Value end, int64_t width,
                               ValueRange init, Fn &&body) {
    Value count = arith::SubIOp::create(e.b, e.loc, end, first);
    Value whole = e.divIndex(count, width);
    Value yes = arith::ConstantIntOp::create(e.b, e.loc, 1, 1);
    SmallVector<Value> acc =
        e.foldRange(e.index(0), whole, init, [&](Value i, ValueRange acc) {
          Value start = e.addIndex(first, e.mulIndex(i, width));
          Tile t;
          for (int64_t j = 0; j < width; ++j) {
            t.positions.push_back(e.addIndex(start, e.index(j)));
            t.valid.push_back(yes);
          }
          return body(t, acc);
        });
    Value start = e.addIndex(first, e.mulIndex(whole, width));
    Value rest = arith::CmpIOp::create(e.b, e.loc, arith::CmpIPredicate::ult,
                                       start, end);
    auto partial = scf::IfOp::create(e.b, e.loc, ValueRange(acc).getTypes(),
                                     rest, /*withElseRegion=*/true);
    // Without results the builder has put in the yields; ours replace them.
    for (mlir::Block *branch : {partial.thenBlock(), partial.elseBlock()})
      if (!branch->empty())
        branch->back().erase();
    OpBuilder::InsertionGuard guard(e.b);
    e.b.setInsertionPointToEnd(&partial.getElseRegion().front());
    scf::YieldOp::create(e.b, e.loc, acc);
    e.b.setInsertionPointToEnd(&partial.getThenRegion().front());
    Value last = arith::SubIOp::create(e.b, e.loc, end, e.index(1));
    Tile t;
    for (int64_t j = 0; j < width; ++j) {
      Value position = e.addIndex(start, e.index(j));
      t.valid.push_back(arith::CmpIOp::create(
          e.b, e.loc, arith::CmpIPredicate::ult, position, end));
      t.positions.push_back(
          arith::SelectOp::create(e.b, e.loc, t.valid.back(), position, last));
    }
    scf::YieldOp::create(e.b, e.loc, body(t, acc));
    return SmallVector<Value>(partial.getResults());
  }

  /// A vector in f64.
  Value widen(Value v) {
    auto type = cast<VectorType>(v.getType());
    auto wideType = VectorType::get(type.getShape(), wide);
    return type == wideType ? v
                            : arith::ExtFOp::create(e.b, e.loc, wideType, v);
  }
  Value splat(Value scalar, VectorType type) {
    return vector::BroadcastOp::create(e.b, e.loc, type, scalar);
  }
  Value position(Value index) {
    return splat(arith::IndexCastOp::create(e.b, e.loc, positionType, index),
                 positionVector);
  }
  Value compare(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(e.b, e.loc, predicate, x, y);
  }
  Value both(Value x, Value y) {
    return arith::AndIOp::create(e.b, e.loc, x, y);
  }
  /// Whether query position(s) t see key position(s) s (vectors of i64
  /// positions; see visibleKeyRange), and `valid` (an i1).
  Value visible(Value t, Value s, Value valid) {
    using P = arith::CmpIPredicate;
    Value mask =
        compare(P::slt, s,
                splat(arith::ConstantIntOp::create(e.b, e.loc, keyLen, 64),
                      positionVector));
    if (causal)
      mask = both(mask, compare(P::sle, s, t));
    if (window > 0) {
      Value reach = arith::SubIOp::create(
          e.b, e.loc, t,
          splat(arith::ConstantIntOp::create(e.b, e.loc, window - 1, 64),
                positionVector));
      mask = both(mask, compare(P::sge, s, reach));
    }
    return both(mask, splat(valid, VectorType::get({kLanes}, e.b.getI1Type())));
  }

  /// Scratch for a block's columns: D vectors of kLanes, in `type`, on the
  /// stack. It is allocated at the top of a task (the CPU target allocates
  /// it once per chunk of tasks: tg-cpu-parallelize-loops), and each task
  /// writes it before it reads it.
  Value columns(Type type) {
    return memref::AllocaOp::create(e.b, e.loc,
                                    MemRefType::get({dim * kLanes}, type));
  }
  Value column(Value scratch, Value d) {
    auto type = cast<MemRefType>(scratch.getType()).getElementType();
    return vector::LoadOp::create(e.b, e.loc, VectorType::get({kLanes}, type),
                                  scratch, ValueRange{e.mulIndex(d, kLanes)});
  }
  void setColumn(Value v, Value scratch, Value d) {
    vector::StoreOp::create(e.b, e.loc, v, scratch,
                            ValueRange{e.mulIndex(d, kLanes)});
  }
  /// Where plane (b, h) of `x` starts, and its rows at `positions`.
  Value plane(const FlashOperand &x, Value b, Value h) {
    return e.addIndex(e.index(x.offset),
                      e.addIndex(e.mulIndex(b, x.batchStride),
                                 e.mulIndex(h, x.headStride)));
  }
  SmallVector<Value> rowsAt(const FlashOperand &x, Value plane,
                            ArrayRef<Value> positions) {
    SmallVector<Value> rows;
    for (Value position : positions)
      rows.push_back(e.addIndex(plane, e.mulIndex(position, x.rowStride)));
    return rows;
  }
  /// Element d of the row of `x` starting at `row`.
  Value at(const FlashOperand &x, Value row, Value d) {
    return e.load(x.flat, e.addIndex(row, d));
  }
  /// The block's rows of `x` (plane `plane`), transposed into `scratch`;
  /// rotated first where the op applies a rope (through `rotatedRows`,
  /// scratch of kLanes rows).
  void transpose(const FlashOperand &x, Value plane, const TaskRows &blk,
                 Value scratch, Value rotatedRows = {}) {
    SmallVector<Value> rows = rowsAt(x, plane, blk.positions);
    if (!rotatedRows) {
      transposeRows(x, rows, scratch);
      return;
    }
    SmallVector<Value> laneRows = packedRowStarts();
    for (auto [i, row] : llvm::enumerate(rows))
      storeRow(rotate(loadRow(x.flat, row), blk.positions[i], false),
               rotatedRows, laneRows[i]);
    transposeRows(packedRows(rotatedRows), laneRows, scratch);
  }
  /// Where the kLanes rows of packed block scratch start.
  SmallVector<Value> packedRowStarts() {
    SmallVector<Value> starts;
    for (int64_t i = 0; i < kLanes; ++i)
      starts.push_back(e.index(i * dim));
    return starts;
  }
  /// Rows `rows` of `x` transposed into `scratch`.
  void transposeRows(const FlashOperand &x, ArrayRef<Value> rows,
                     Value scratch) {
    e.loop(dim, [&](Value d) {
      SmallVector<Value> values;
      for (Value row : rows)
        values.push_back(at(x, row, d));
      setColumn(vector::FromElementsOp::create(e.b, e.loc, laneVector, values),
                scratch, d);
    });
  }
  /// The same, into new scratch.
  Value transposed(const FlashOperand &x, Value plane, const TaskRows &blk) {
    Value scratch = columns(e.element);
    transpose(x, plane, blk, scratch, rope ? columns(e.element) : Value());
    return scratch;
  }

  /// Rows of D elements one after the other in `flat`, as an operand of
  /// one plane.
  FlashOperand packedRows(Value flat, int64_t rowsPerPlane = 0) {
    return FlashOperand{flat, 0, 0, rowsPerPlane * dim, dim};
  }
  Value loadRow(Value flat, Value at) {
    return vector::LoadOp::create(
        e.b, e.loc,
        VectorType::get({dim}, getElementTypeOrSelf(flat.getType())), flat,
        ValueRange{at});
  }
  void storeRow(Value row, Value flat, Value at) {
    vector::StoreOp::create(e.b, e.loc, row, flat, ValueRange{at});
  }
  /// Fills `cosines` and `sines` for positions [0, positions), each in one
  /// step of a parallel loop, as the rope kernel computes them, and there
  /// calls also(t, c, s) with the position's vectors; the loop ends before
  /// the kernel's next.
  template <typename Fn> void ropeTables(int64_t positions, Fn &&also) {
    int64_t half = dim / 2;
    auto type = MemRefType::get({positions * half}, e.element);
    cosines = memref::AllocOp::create(e.b, e.loc, type);
    sines = memref::AllocOp::create(e.b, e.loc, type);
    e.rows(positions, [&](Value t) {
      auto [c, s] =
          ropeRowRotation(e, *rope, /*inverse=*/false, ropePosition(e, t), dim);
      Value at = e.mulIndex(t, half);
      vector::StoreOp::create(e.b, e.loc, c, cosines, ValueRange{at});
      vector::StoreOp::create(e.b, e.loc, s, sines, ValueRange{at});
      also(t, c, s);
    });
  }
  void freeRopeTables() {
    memref::DeallocOp::create(e.b, e.loc, cosines);
    memref::DeallocOp::create(e.b, e.loc, sines);
  }
  /// Row `x` (a vector of D elements) of position `t` rotated by the rope,
  /// or back (`inverse`: by the negated sines, which are the sines of the
  /// negated angles, rounded alike), as the rope kernel does.
  Value rotate(Value x, Value t, bool inverse) {
    int64_t half = dim / 2;
    auto halfType = VectorType::get({half}, e.element);
    Value at = e.mulIndex(t, half);
    Value c =
        vector::LoadOp::create(e.b, e.loc, halfType, cosines, ValueRange{at});
    Value s =
        vector::LoadOp::create(e.b, e.loc, halfType, sines, ValueRange{at});
    if (inverse)
      s = arith::NegFOp::create(e.b, e.loc, s);
    return rotateRow(e, x, c, s);
  }
  /// f64 scratch set to zeros.
  void clearColumns(Value scratch) {
    Value zero = splat(e.constant(wide, 0.0), wideLaneVector);
    e.loop(dim, [&](Value d) { setColumn(zero, scratch, d); });
  }
  /// New f64 scratch of zeros.
  Value zeroColumns() {
    Value scratch = columns(wide);
    clearColumns(scratch);
    return scratch;
  }
  /// Per tile position j, the vector of (block row i) . (row j of `x`, at
  /// rows[j]) over the lanes i: D broadcast FMAs.
  SmallVector<Value> products(Value scratch, const FlashOperand &x,
                              ArrayRef<Value> rows) {
    SmallVector<Value> init(rows.size(), splat(e.constant(0.0), laneVector));
    return e.fold(dim, init, [&](Value d, ValueRange sums) {
      Value col = column(scratch, d);
      SmallVector<Value> next;
      for (auto [row, sum] : llvm::zip_equal(rows, sums))
        next.push_back(math::FmaOp::create(
            e.b, e.loc, col, splat(at(x, row, d), laneVector), sum));
      return next;
    });
  }
  /// sum_j weights[j] * row j of `y` (at rows[j]), column d, in the
  /// element type (two chains, then added).
  Value weightedColumn(ArrayRef<Value> weights, const FlashOperand &y,
                       ArrayRef<Value> rows, Value d) {
    Value chains[2];
    for (auto [j, w] : llvm::enumerate(weights)) {
      Value x = splat(at(y, rows[j], d), laneVector);
      Value &sum = chains[j % 2];
      sum = sum ? math::FmaOp::create(e.b, e.loc, w, x, sum) : e.mul(w, x);
    }
    return chains[1] ? e.add(chains[0], chains[1]) : chains[0];
  }
  /// acc column d = acc * keep + sum_j weights[j] * row j of `x`, for
  /// each of `sums` (f64 scratch, weights, x and its rows), column by
  /// column.
  struct Sum {
    Value acc;
    ArrayRef<Value> weights;
    const FlashOperand &x;
    ArrayRef<Value> rows;
  };
  void accumulate(ArrayRef<Sum> sums, Value keep = {}) {
    e.loop(dim, [&](Value d) {
      for (const Sum &s : sums) {
        Value old = column(s.acc, d);
        if (keep)
          old = e.mul(old, keep);
        Value part = widen(weightedColumn(s.weights, s.x, s.rows, d));
        setColumn(e.add(old, part), s.acc, d);
      }
    });
  }
  /// out row of lane i = column scratch * factor (lane i of a vector, f64),
  /// for the lanes in range (plane `plane` of `out`).
  void store(Value scratch, Value factor, const FlashOperand &out, Value plane,
             const TaskRows &blk) {
    SmallVector<Value> rows = rowsAt(out, plane, blk.positions);
    eachLane(blk, [&](int64_t i) {
      Value f = vector::ExtractOp::create(e.b, e.loc, factor, i);
      e.loop(dim, [&](Value d) {
        Value v =
            e.load(scratch, e.addIndex(e.mulIndex(d, kLanes), e.index(i)));
        e.store(e.narrow(e.mul(v, f)), out.flat, e.addIndex(rows[i], d));
      });
    });
  }
  /// The same, each row rotated back by the rope (the key gradients: the
  /// rows are rounded, then rotated, as the rope kernel would).
  void storeRotatedBack(Value scratch, Value factor, const FlashOperand &out,
                        Value plane, const TaskRows &blk) {
    int64_t half = dim / 2;
    SmallVector<Value> rows = rowsAt(out, plane, blk.positions);
    eachLane(blk, [&](int64_t i) {
      Value f = vector::ExtractOp::create(e.b, e.loc, factor, i);
      Value table = e.mulIndex(blk.positions[i], half);
      auto element = [&](Value d) {
        return e.narrow(e.mul(
            e.load(scratch, e.addIndex(e.mulIndex(d, kLanes), e.index(i))), f));
      };
      e.loop(half, [&](Value d) {
        Value d2 = e.addIndex(d, e.index(half));
        Value x1 = element(d), x2 = element(d2);
        Value c = e.load(cosines, e.addIndex(table, d));
        Value s = e.load(sines, e.addIndex(table, d));
        e.store(e.add(e.mul(x1, c), e.mul(x2, s)), out.flat,
                e.addIndex(rows[i], d));
        e.store(e.sub(e.mul(x2, c), e.mul(x1, s)), out.flat,
                e.addIndex(rows[i], d2));
      });
    });
  }
  /// body(i) for each lane i of the block in range.
  template <typename Fn> void eachLane(const TaskRows &blk, Fn &&body) {
    for (int64_t i = 0; i < kLanes; ++i) {
      Value inRange = compare(arith::CmpIPredicate::ult, e.index(i), blk.count);
      auto ifOp = scf::IfOp::create(e.b, e.loc, inRange);
      OpBuilder::InsertionGuard guard(e.b);
      e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      body(i);
    }
  }
  /// The lanes of a vector over element 0 of a block's rows of `x`, in the
  /// element type.
  Value gather(const FlashOperand &x, Value plane, const TaskRows &blk) {
    SmallVector<Value> values;
    for (Value row : rowsAt(x, plane, blk.positions))
      values.push_back(e.narrow(e.load(x.flat, row)));
    return vector::FromElementsOp::create(e.b, e.loc, laneVector, values);
  }
  Value wideSplat(double v) {
    return splat(e.constant(wide, v), wideLaneVector);
  }
  /// x where x > y, else y (one max instruction; a NaN score still makes its
  /// row NaN through its exponential).
  Value greater(Value x, Value y) {
    Value above =
        arith::CmpFOp::create(e.b, e.loc, arith::CmpFPredicate::OGT, x, y);
    return arith::SelectOp::create(e.b, e.loc, above, x, y);
  }
  /// Pairwise sum or maximum of values.
  template <typename Fn> Value tree(ArrayRef<Value> values, Fn &&combine) {
    SmallVector<Value> level(values);
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(combine(level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level.swap(next);
    }
    return level.front();
  }
  Value masked(Value mask, Value v, double fill) {
    return arith::SelectOp::create(e.b, e.loc, mask, v,
                                   splat(e.constant(fill), laneVector));
  }
  Value scaled(Value v) {
    return e.mul(v, splat(e.constant(scale), laneVector));
  }

  /// The keys any query of [first, first + count) sees, and the queries
  /// any key of [first, first + count) is seen by (visibleKeyRange).
  std::pair<Value, Value> keysOf(const TaskRows &blk) {
    Value begin = e.index(0), end = e.index(keyLen);
    if (causal)
      end = e.minIndex(e.addIndex(blk.first, blk.count), end);
    if (window > 0)
      begin = e.maxIndex(
          arith::SubIOp::create(e.b, e.loc, blk.first, e.index(window - 1)),
          begin);
    return {begin, end};
  }
  std::pair<Value, Value> queriesOf(const TaskRows &blk) {
    Value begin = e.index(0), end = e.index(queryLen);
    if (causal)
      begin = blk.first;
    if (window > 0)
      end = e.minIndex(
          e.addIndex(e.addIndex(blk.first, blk.count), e.index(window - 1)),
          end);
    return {begin, end};
  }
  /// A gradient tile, per position j: p = exp(scale x.row_j - lse(j)) where
  /// visible(j), else 0, and dS = p (y.row'_j - delta(j)), with the block's
  /// columns x and y (keys and values, or queries and output gradients) and
  /// rows j of xs and ys (queries and output gradients, or keys and values)
  /// at xRows[j] and yRows[j].
  struct GradientTile {
    SmallVector<Value> p, dS;
  };
  template <typename Visible, typename Lse, typename Delta>
  GradientTile gradientTile(Value x, const FlashOperand &xs,
                            ArrayRef<Value> xRows, Value y,
                            const FlashOperand &ys, ArrayRef<Value> yRows,
                            Visible &&visible, Lse &&lse, Delta &&delta) {
    SmallVector<Value> scores = products(x, xs, xRows);
    SmallVector<Value> dps = products(y, ys, yRows);
    GradientTile g;
    for (int64_t j = 0, n = xRows.size(); j < n; ++j) {
      g.p.push_back(
          masked(visible(j), e.exp(e.sub(scaled(scores[j]), lse(j))), 0.0));
      g.dS.push_back(e.mul(g.p.back(), e.sub(dps[j], delta(j))));
    }
    return g;
  }

  /// Task `task` over query blocks: its batch, query head, key head and
  /// block.
  struct QueryTask {
    Value b, h, kvHead;
    TaskRows blk;
  };
  QueryTask queryTask(Value task) {
    Value plane = e.divIndex(task, blocks(queryLen));
    Value b = e.divIndex(plane, heads), h = e.remIndex(plane, heads);
    return {b, h, e.divIndex(h, group),
            taskRows(e.remIndex(task, blocks(queryLen)), queryLen)};
  }

  /// Forward, a block of query rows at a time: an online softmax over the
  /// tiles of their keys (per lane the running max m, the f64 denominator l
  /// and the f64 output columns, rescaled by exp(m_old - m_new) once per
  /// tile), then o = acc / l and lse = m + log(l).
  void forward(const FlashOperand &q, const FlashOperand &k,
               const FlashOperand &v, const FlashOperand &o,
               const FlashOperand &lse) {
    Type lseType = getElementTypeOrSelf(lse.flat.getType());
    double negInf = -std::numeric_limits<double>::infinity();
    // With a rope, the keys rotated once, packed, before any task reads
    // them (each query block reads them all); the queries as each task
    // transposes its block.
    FlashOperand keys = k;
    if (rope) {
      keys = packedRows(
          memref::AllocOp::create(
              e.b, e.loc,
              MemRefType::get({batch * kvHeads * keyLen * dim}, e.element)),
          keyLen);
      keys.batchStride = kvHeads * keyLen * dim;
      // Each key position's rows of every plane rotated with the position's
      // table row, as the rope kernel does.
      ropeTables(std::max(queryLen, keyLen), [&](Value s, Value c, Value sn) {
        Value inRange = compare(arith::CmpIPredicate::ult, s, e.index(keyLen));
        auto ifOp = scf::IfOp::create(e.b, e.loc, inRange);
        OpBuilder::InsertionGuard guard(e.b);
        e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
        e.loop(batch * kvHeads, [&](Value p) {
          Value b = e.divIndex(p, kvHeads), hk = e.remIndex(p, kvHeads);
          Value from = rowsAt(k, plane(k, b, hk), {s})[0];
          Value to = rowsAt(keys, plane(keys, b, hk), {s})[0];
          storeRow(rotateRow(e, loadRow(k.flat, from), c, sn), keys.flat, to);
        });
      });
    }
    e.rows(batch * heads * blocks(queryLen), [&](Value task) {
      auto [b, h, kvHead, blk] = queryTask(task);
      Value kPlane = plane(keys, b, kvHead), vPlane = plane(v, b, kvHead);
      auto [first, end] = keysOf(blk);
      Value queries = transposed(q, plane(q, b, h), blk), acc = zeroColumns();
      SmallVector<Value> state = foldTiles(
          first, end, kFlashForwardTile,
          {splat(e.constant(negInf), laneVector), wideSplat(0.0)},
          [&](const Tile &tl, ValueRange old) {
            SmallVector<Value> scores;
            for (auto [j, p] : llvm::enumerate(products(
                     queries, keys, rowsAt(keys, kPlane, tl.positions))))
              scores.push_back(masked(
                  visible(blk.at, position(tl.positions[j]), tl.valid[j]),
                  scaled(p), negInf));
            Value max = greater(old[0], tree(scores, [&](Value x, Value y) {
                                  return greater(x, y);
                                }));
            // A lane that has seen no key yet keeps m = -inf: shift by 0.
            Value none = arith::CmpFOp::create(
                e.b, e.loc, arith::CmpFPredicate::OEQ, max,
                splat(e.constant(negInf), laneVector));
            Value shift = arith::SelectOp::create(
                e.b, e.loc, none, splat(e.constant(0.0), laneVector), max);
            Value keep = widen(e.exp(e.sub(old[0], shift)));
            SmallVector<Value> p;
            for (Value s : scores)
              p.push_back(e.exp(e.sub(s, shift)));
            SmallVector<Value> values = rowsAt(v, vPlane, tl.positions);
            accumulate({{acc, p, v, values}}, keep);
            Value tileSum =
                tree(p, [&](Value x, Value y) { return e.add(x, y); });
            return SmallVector<Value>{
                max, e.add(e.mul(old[1], keep), widen(tileSum))};
          });
      store(acc, e.div(wideSplat(1.0), state[1]), o, plane(o, b, h), blk);
      Value lseValues =
          e.add(widen(state[0]), math::LogOp::create(e.b, e.loc, state[1]));
      SmallVector<Value> lseRows = rowsAt(lse, plane(lse, b, h), blk.positions);
      eachLane(blk, [&](int64_t i) {
        Value value = vector::ExtractOp::create(e.b, e.loc, lseValues, i);
        if (lseType != wide)
          value = arith::TruncFOp::create(e.b, e.loc, lseType, value);
        e.store(value, lse.flat, lseRows[i]);
      });
    });
    if (rope) {
      memref::DeallocOp::create(e.b, e.loc, keys.flat);
      freeRopeTables();
    }
  }

  /// The widest vector (up to a lane vector) that tiles a row of the head
  /// dim: the query gradient is summed along rows.
  int64_t rowVectorWidth() const {
    int64_t width = kLanes;
    while (dim % width != 0)
      width /= 2;
    return width;
  }
  /// Adds to each query row j of a tile (position positions[j] of query head
  /// `g` of the task's group, in `dqSums`: [group, queryLen, dim] in f64)
  /// sum_i dS_j[i] k_i over the block's key rows i (at kRows[i]): per key a
  /// broadcast of its dS and FMAs with its row, along the head dim in the
  /// element type, then once into the f64 sums.
  void accumulateQueryRows(Value dqSums, Value g, ArrayRef<Value> positions,
                           ArrayRef<Value> dS, const FlashOperand &k,
                           ArrayRef<Value> kRows) {
    int64_t width = rowVectorWidth();
    auto rowVector = VectorType::get({width}, e.element);
    auto wideRowVector = VectorType::get({width}, wide);
    for (auto [position, scores] : llvm::zip_equal(positions, dS)) {
      Value row = e.mulIndex(
          e.addIndex(e.mulIndex(g, queryLen), position), dim);
      e.loop(dim / width, [&](Value c) {
        Value offset = e.mulIndex(c, width);
        Value sum;
        for (int64_t i = 0; i < kLanes; ++i) {
          Value weight = splat(
              vector::ExtractOp::create(e.b, e.loc, scores, i), rowVector);
          Value key = vector::LoadOp::create(e.b, e.loc, rowVector, k.flat,
                                             e.addIndex(kRows[i], offset));
          sum = sum ? math::FmaOp::create(e.b, e.loc, weight, key, sum)
                    : e.mul(weight, key);
        }
        Value at = e.addIndex(row, offset);
        Value old = vector::LoadOp::create(e.b, e.loc, wideRowVector, dqSums, at);
        vector::StoreOp::create(e.b, e.loc, e.add(old, widen(sum)), dqSums, at);
      });
    }
  }

  /// Backward (FlashAttention-2's): delta_r = dO_r . o_r for every query row,
  /// kept in element 0 of the row's dq until the row is written; then per
  /// (batch, key head) plane, its blocks of key rows (the laneVector) in
  /// turn, each over tiles of the queries that see it, for each query head
  /// of its group: with p = exp(scale q.k - lse) and dS = p (dO.v - delta),
  /// dv_s = sum p dO_t and dk_s = scale sum dS q_t for the block, and
  /// dq_t = scale sum dS k_s added into the plane's f64 query sums, written
  /// once its last block is done. Scores are computed once per (query, key)
  /// pair; a plane's query rows are its task's alone, so the sums need no
  /// synchronisation.
  void backward(const FlashOperand &q, const FlashOperand &k,
                const FlashOperand &v, const FlashOperand &o,
                const FlashOperand &lse, const FlashOperand &dOut,
                const FlashOperand &dq, const FlashOperand &dk,
                const FlashOperand &dv) {
    e.rows(batch * heads * queryLen, [&](Value r) {
      Value t = e.remIndex(r, queryLen), p = e.divIndex(r, queryLen);
      Value b = e.divIndex(p, heads), h = e.remIndex(p, heads);
      auto rowOf = [&](const FlashOperand &x) {
        return rowsAt(x, plane(x, b, h), {t})[0];
      };
      Value dORow = rowOf(dOut), oRow = rowOf(o);
      Value delta = e.narrow(e.wideSum(dim, [&](Value d) {
        return e.mul(at(dOut, dORow, d), at(o, oRow, d));
      }));
      e.store(delta, dq.flat, rowOf(dq));
    });
    if (rope)
      ropeTables(std::max(queryLen, keyLen), [](Value, Value, Value) {});
    int64_t width = rowVectorWidth();
    e.rows(batch * kvHeads, [&](Value kvPlane) {
      Value b = e.divIndex(kvPlane, kvHeads), hk = e.remIndex(kvPlane, kvHeads);
      Value kPlane = plane(k, b, hk), vPlane = plane(v, b, hk);
      Value keys = columns(e.element), values = columns(e.element);
      Value dkSum = columns(wide), dvSum = columns(wide);
      // With a rope: the group's query rows rotated once into `queries`
      // ([group, T, D], on the heap), and each key block's rows rotated
      // into `keyRows` (transposed from there, and read as rows for dq).
      FlashOperand queries = q;
      Value keyRows;
      if (rope) {
        keyRows = columns(e.element);
        queries = packedRows(
            memref::AllocOp::create(
                e.b, e.loc,
                MemRefType::get({group * queryLen * dim}, e.element)),
            queryLen);
        e.loop(group, [&](Value g) {
          Value from = plane(q, b, e.addIndex(e.mulIndex(hk, group), g));
          e.loop(queryLen, [&](Value t) {
            storeRow(rotate(loadRow(q.flat, rowsAt(q, from, {t})[0]), t, false),
                     queries.flat,
                     e.mulIndex(e.addIndex(e.mulIndex(g, queryLen), t), dim));
          });
        });
      }
      // On the heap: group * T * D doubles can be megabytes.
      Value dqSums = memref::AllocOp::create(
          e.b, e.loc, MemRefType::get({group * queryLen * dim}, wide));
      Value zeros = splat(e.constant(wide, 0.0),
                          VectorType::get({width}, wide));
      e.loop(group * queryLen * dim / width, [&](Value i) {
        vector::StoreOp::create(e.b, e.loc, zeros, dqSums,
                                ValueRange{e.mulIndex(i, width)});
      });
      e.loop(blocks(keyLen), [&](Value block) {
        TaskRows blk = taskRows(block, keyLen);
        auto [first, end] = queriesOf(blk);
        transpose(k, kPlane, blk, keys, keyRows);
        transpose(v, vPlane, blk, values);
        clearColumns(dkSum);
        clearColumns(dvSum);
        FlashOperand keyOperand = rope ? packedRows(keyRows) : k;
        SmallVector<Value> kRows =
            rope ? packedRowStarts() : rowsAt(k, kPlane, blk.positions);
        e.loop(group, [&](Value g) {
          Value h = e.addIndex(e.mulIndex(hk, group), g);
          Value qPlane = rope ? plane(queries, b, g) : plane(q, b, h);
          Value dOPlane = plane(dOut, b, h);
          Value lsePlane = plane(lse, b, h), dqPlane = plane(dq, b, h);
          foldTiles(first, end, kFlashGradientTile, {},
                    [&](const Tile &tl, ValueRange) {
                      SmallVector<Value> qRows =
                          rowsAt(queries, qPlane, tl.positions);
                      SmallVector<Value> dORows =
                          rowsAt(dOut, dOPlane, tl.positions);
                      SmallVector<Value> lseRows =
                          rowsAt(lse, lsePlane, tl.positions);
                      SmallVector<Value> dqRows =
                          rowsAt(dq, dqPlane, tl.positions);
                      GradientTile grad = gradientTile(
                          keys, queries, qRows, values, dOut, dORows,
                          [&](int64_t j) {
                            return visible(position(tl.positions[j]), blk.at,
                                           tl.valid[j]);
                          },
                          [&](int64_t j) {
                            return splat(
                                e.narrow(e.load(lse.flat, lseRows[j])),
                                laneVector);
                          },
                          [&](int64_t j) {
                            return splat(e.load(dq.flat, dqRows[j]),
                                         laneVector);
                          });
                      accumulate({{dvSum, grad.p, dOut, dORows},
                                  {dkSum, grad.dS, queries, qRows}});
                      accumulateQueryRows(dqSums, g, tl.positions, grad.dS,
                                          keyOperand, kRows);
                      return SmallVector<Value>{};
                    });
        });
        if (rope)
          storeRotatedBack(dkSum, wideSplat(scale), dk, plane(dk, b, hk), blk);
        else
          store(dkSum, wideSplat(scale), dk, plane(dk, b, hk), blk);
        store(dvSum, wideSplat(1.0), dv, plane(dv, b, hk), blk);
      });
      // The query gradients, scaled once, over the deltas they kept.
      auto rowVector = VectorType::get({width}, e.element);
      Value scaleVector =
          splat(e.constant(wide, scale), VectorType::get({width}, wide));
      e.loop(group, [&](Value g) {
        Value dqPlane = plane(dq, b, e.addIndex(e.mulIndex(hk, group), g));
        e.loop(queryLen, [&](Value t) {
          Value from = e.mulIndex(e.addIndex(e.mulIndex(g, queryLen), t), dim);
          Value to = rowsAt(dq, dqPlane, {t})[0];
          if (rope) {
            // The whole row, rounded, then rotated back.
            Value sum = e.mul(
                loadRow(dqSums, from),
                splat(e.constant(wide, scale), VectorType::get({dim}, wide)));
            if (e.element != wide)
              sum = arith::TruncFOp::create(
                  e.b, e.loc, VectorType::get({dim}, e.element), sum);
            storeRow(rotate(sum, t, true), dq.flat, to);
            return;
          }
          e.loop(dim / width, [&](Value c) {
            Value offset = e.mulIndex(c, width);
            Value sum = vector::LoadOp::create(
                e.b, e.loc, VectorType::get({width}, wide), dqSums,
                ValueRange{e.addIndex(from, offset)});
            Value scaled = e.mul(sum, scaleVector);
            if (e.element != wide)
              scaled = arith::TruncFOp::create(e.b, e.loc, rowVector, scaled);
            vector::StoreOp::create(e.b, e.loc, scaled, dq.flat,
                                    ValueRange{e.addIndex(to, offset)});
          });
        });
      });
      memref::DeallocOp::create(e.b, e.loc, dqSums);
      if (rope)
        memref::DeallocOp::create(e.b, e.loc, queries.flat);
    });
    if (rope)
      freeRopeTables();
  }
};

/// A flash op's operand or result: the flat view of the buffer it is in,
/// and where in that buffer.
struct FlashPlace {
  Value flat;
  StridedLayout layout;
};

/// Emits flash op `op` (tg.flash_attention or tg.flash_attention_grad),
/// its operands then its results at `places`, in op order. The gradient's
/// result operand, read in the tokens' layout (result_tokens), is read as
/// heads.
LogicalResult emitFlashAttention(Emitter &e, Operation *op,
                                 ArrayRef<FlashPlace> places) {
  auto grad = dyn_cast<FlashAttentionGradOp>(op);
  SmallVector<FlashOperand> x;
  for (auto [i, place] : llvm::enumerate(places)) {
    StridedLayout layout = place.layout;
    if (grad && grad.getResultTokens() && i == 3)
      layout.transpose({0, 2, 1, 3});
    std::optional<FlashOperand> operand = FlashOperand::of(place.flat, layout);
    if (!operand)
      return op->emitOpError("value ")
             << i << " (operands, then results) is not stored as rows of "
                     "contiguous elements; a flash kernel cannot read it";
    x.push_back(*operand);
  }
  if (grad)
    FlashAttention(e, grad).backward(x[0], x[1], x[2], x[3], x[4], x[5], x[6],
                                     x[7], x[8]);
  else
    FlashAttention(e, cast<FlashAttentionOp>(op))
        .forward(x[0], x[1], x[2], x[3], x[4]);
  return success();
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

/// The flat buffers of a fused kernel's values: its inputs and the outputs
/// of what it returns, and local buffers (allocated where first asked for,
/// freed by `free`) for values it computes but does not return.
class FlatBuffers {
public:
  FlatBuffers(OpBuilder &b, Location loc, Block &body, ValueRange inputs,
              ValueRange yielded, ValueRange outputs)
      : b(b), loc(loc) {
    for (auto [arg, input] : llvm::zip(body.getArguments(), inputs))
      buffers[arg] = flatten(b, loc, input);
    for (auto [value, output] : llvm::zip(yielded, outputs))
      buffers[value] = flatten(b, loc, output);
  }

  /// The buffer of `v`, null if it has none yet.
  Value lookup(Value v) const { return buffers.lookup(v); }
  /// The buffer of `v`, a new local one if it has none.
  Value get(Value v) {
    return get(v, MemRefType::get(shapeOf(v), getElementTypeOrSelf(v.getType())));
  }
  /// A local buffer of `type` for the kernel's own use.
  Value local(MemRefType type) {
    locals.push_back(memref::AllocOp::create(b, loc, type));
    return flatten(b, loc, locals.back());
  }
  void free() {
    for (Value local : locals)
      memref::DeallocOp::create(b, loc, local);
  }

private:
  Value get(Value v, MemRefType type) {
    Value &buffer = buffers[v];
    if (!buffer)
      buffer = local(type);
    return buffer;
  }

  OpBuilder &b;
  Location loc;
  DenseMap<Value, Value> buffers; // body values -> flat buffers
  SmallVector<Value> locals;
};

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

namespace {

/// Where each value of a flash group is stored (see isFlashGroup): a
/// layout whose root is a block argument (an input), a yielded value (an
/// output) or a flash op's result kept in a local buffer of its own.
struct FlashGroupLayouts {
  SmallVector<Operation *> flashOps;
  DenseMap<Value, StridedLayout> where;
};

bool isFlash(Operation *op) {
  return isa<FlashAttentionOp, FlashAttentionGradOp>(op);
}

/// The layouts of `body`'s values, or none where it is not a flash group.
std::optional<FlashGroupLayouts> analyseFlashGroup(Block &body) {
  FlashGroupLayouts g;
  // What the block reads: its arguments (a kernel's) or values from
  // outside (a dispatch region's).
  auto isInput = [&](Value v) {
    return !v.getDefiningOp() || v.getDefiningOp()->getBlock() != &body;
  };
  bool views = false;
  for (Operation &op : body.without_terminator()) {
    if (isFlash(&op))
      g.flashOps.push_back(&op);
    else if (isLayoutView(&op) || isa<ConcatOp>(op))
      views = true;
    else
      return std::nullopt;
  }
  if (g.flashOps.empty() || !views)
    return std::nullopt;
  // Each value is stored in one place: one that two placed would need a
  // copy, which is what the group is there to avoid.
  auto place = [&](Value v, const StridedLayout &layout) {
    return g.where.try_emplace(v, layout).second;
  };
  llvm::SetVector<Value> yielded(body.getTerminator()->operand_begin(),
                                 body.getTerminator()->operand_end());
  for (Value v : yielded)
    if (!isInput(v))
      place(v, StridedLayout::packed(v));
  // Outputs: the transposes, reshapes and concatenations after the flash
  // ops place what they read inside what they yield.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (isFlash(&op) || !g.where.count(op.getResult(0)))
      continue;
    for (OpOperand &input : op.getOpOperands()) {
      StridedLayout layout = g.where.at(op.getResult(0));
      if (isInput(input.get()) || !input.get().hasOneUse() ||
          !layout.applyViewBackward(&op, input.getOperandNumber()) ||
          !place(input.get(), layout))
        return std::nullopt;
    }
  }
  // Inputs: the slices, reshapes and transposes before the flash ops read
  // them where they are.
  auto placed = [&](Value v) -> const StridedLayout * {
    if (isInput(v))
      g.where.try_emplace(v, StridedLayout::packed(v));
    auto it = g.where.find(v);
    return it == g.where.end() ? nullptr : &it->second;
  };
  for (Operation &op : body.without_terminator()) {
    if (isFlash(&op)) {
      if (!llvm::all_of(op.getOperands(), placed))
        return std::nullopt;
      for (Value result : op.getResults())
        g.where.try_emplace(result, StridedLayout::packed(result));
      continue;
    }
    if (g.where.count(op.getResult(0)))
      continue;
    const StridedLayout *from = placed(op.getOperand(0));
    if (!isLayoutView(&op) || !from)
      return std::nullopt;
    StridedLayout layout = *from;
    if (!layout.applyView(&op))
      return std::nullopt;
    place(op.getResult(0), layout);
  }
  // The flash kernels read and write rows of contiguous elements.
  for (Operation *op : g.flashOps) {
    auto grad = dyn_cast<FlashAttentionGradOp>(op);
    for (auto [i, v] : llvm::enumerate(
             llvm::concat<Value>(op->getOperands(), op->getResults()))) {
      StridedLayout layout = g.where.at(v);
      if (grad && grad.getResultTokens() && i == 3)
        layout.transpose({0, 2, 1, 3});
      if (!FlashOperand::of(Value(), layout))
        return std::nullopt;
    }
  }
  return g;
}

} // namespace

bool isFlashGroup(Block &body) {
  return analyseFlashGroup(body).has_value();
}

LogicalResult emitFlashGroup(OpBuilder &b, Block &body, ValueRange inputs,
                             ValueRange yielded, ValueRange outputs) {
  std::optional<FlashGroupLayouts> g = analyseFlashGroup(body);
  assert(g && "emitFlashGroup on a block that is not a flash group");
  FlatBuffers buffers(b, g->flashOps.front()->getLoc(), body, inputs, yielded,
                      outputs);
  for (Operation *op : g->flashOps) {
    Emitter e(b, op->getLoc(), getElementTypeOrSelf(op->getResult(0).getType()));
    SmallVector<FlashPlace> places;
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
      const StridedLayout &layout = g->where.at(v);
      places.push_back({buffers.get(layout.root), layout});
    }
    if (failed(emitFlashAttention(e, op, places)))
      return failure();
  }
  buffers.free();
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
