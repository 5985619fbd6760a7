// What the kernel bodies share (KernelBodies.cpp, FlashAttentionBodies.cpp):
// the emitter of arithmetic, loops and sums at one insertion point, the flat
// buffers of a fused kernel's values, RoPE's rotation, and the flash
// attention kernels' entry point.
#ifndef TG_PASSES_LOWERING_KERNELEMITTER_H
#define TG_PASSES_LOWERING_KERNELEMITTER_H

#include "tg/IR/Rope.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/StridedLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

#include <limits>

namespace mlir::tg::kernel_bodies {

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
  Value max(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
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
  Value minIndex(Value x, Value y) {
    return arith::MinSIOp::create(b, loc, x, y);
  }
  Value maxIndex(Value x, Value y) {
    return arith::MaxSIOp::create(b, loc, x, y);
  }
  /// for each row r < n, in any order: body(r). The row loops of row-wise
  /// ops; a row's inner loops (`loop`, `fold`, `sum`) write element i of the
  /// row (or of a per-column operand) at their own index i only, and read
  /// nothing another iteration writes, which is what lets a GPU target spread
  /// a row over the lanes of a warp. (The "rows" of `columnSums` and of
  /// partial reductions are blocks of columns: their folds only read.)
  template <typename Fn> scf::ParallelOp rows(int64_t n, Fn &&body) {
    auto parallel =
        scf::ParallelOp::create(b, loc, ValueRange{index(0)},
                                ValueRange{index(n)}, ValueRange{index(1)});
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
    return wideSums(n, 1,
                    [&](Value i) { return SmallVector<Value>{term(i)}; })[0];
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
    return v.getType() == element ? v
                                  : arith::TruncFOp::create(b, loc, element, v);
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
    store(convert(v, cast<MemRefType>(flat.getType()).getElementType()), flat,
          i);
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
    if (!vectorRows) {
      blocks->setAttr(kThreadRowsAttr, b.getUnitAttr());
      blocks->setAttr(kRowLocalColumnsAttr, b.getUnitAttr());
    }
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
inline Value flatten(OpBuilder &b, Location loc, Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getRank() <= 1)
    return memref;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return memref::CollapseShapeOp::create(b, loc, memref,
                                         ArrayRef<ReassociationIndices>{all});
}

inline ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

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
    return get(v,
               MemRefType::get(shapeOf(v), getElementTypeOrSelf(v.getType())));
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

/// Position t (an index) in f64.
Value ropePosition(Emitter &e, Value t);

/// The cosines and sines of the D/2 pairs' angles at `position` (f64), as
/// two vectors of D/2 elements: the pairs' frequencies fold to constants.
std::pair<Value, Value> ropeRowRotation(Emitter &e, const RopeFrequencies &rope,
                                        bool inverse, Value position,
                                        int64_t dim);

/// Row `x` (a vector of D elements) rotated by the cosines `c` and sines
/// `s` of its pairs (vectors of D/2).
Value rotateRow(Emitter &e, Value x, Value c, Value s);

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
                                 ArrayRef<FlashPlace> places);

} // namespace mlir::tg::kernel_bodies

#endif // TG_PASSES_LOWERING_KERNELEMITTER_H
