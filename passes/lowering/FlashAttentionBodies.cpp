// Flash attention's kernel bodies (tg.flash_attention, tg.flash_attention_grad
// and the flash groups of tg-fuse-attention-layouts): micro-kernels over
// blocks of rows, the online softmax lane-wise; see FlashAttention below.
#include "KernelEmitter.h"

#include "tg/IR/TgOps.h"

#include "llvm/ADT/SetVector.h"

#include <cmath>

namespace mlir::tg {
using namespace kernel_bodies;

namespace {

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
    return FlashOperand{flat, layout.offset, strides[0], strides[1],
                        strides[2]};
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
    return e.addIndex(
        e.index(x.offset),
        e.addIndex(e.mulIndex(b, x.batchStride), e.mulIndex(h, x.headStride)));
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
      Value row =
          e.mulIndex(e.addIndex(e.mulIndex(g, queryLen), position), dim);
      e.loop(dim / width, [&](Value c) {
        Value offset = e.mulIndex(c, width);
        Value sum;
        for (int64_t i = 0; i < kLanes; ++i) {
          Value weight = splat(vector::ExtractOp::create(e.b, e.loc, scores, i),
                               rowVector);
          Value key = vector::LoadOp::create(e.b, e.loc, rowVector, k.flat,
                                             e.addIndex(kRows[i], offset));
          sum = sum ? math::FmaOp::create(e.b, e.loc, weight, key, sum)
                    : e.mul(weight, key);
        }
        Value at = e.addIndex(row, offset);
        Value old =
            vector::LoadOp::create(e.b, e.loc, wideRowVector, dqSums, at);
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
      Value zeros =
          splat(e.constant(wide, 0.0), VectorType::get({width}, wide));
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
          foldTiles(
              first, end, kFlashGradientTile, {},
              [&](const Tile &tl, ValueRange) {
                SmallVector<Value> qRows =
                    rowsAt(queries, qPlane, tl.positions);
                SmallVector<Value> dORows = rowsAt(dOut, dOPlane, tl.positions);
                SmallVector<Value> lseRows =
                    rowsAt(lse, lsePlane, tl.positions);
                SmallVector<Value> dqRows = rowsAt(dq, dqPlane, tl.positions);
                GradientTile grad = gradientTile(
                    keys, queries, qRows, values, dOut, dORows,
                    [&](int64_t j) {
                      return visible(position(tl.positions[j]), blk.at,
                                     tl.valid[j]);
                    },
                    [&](int64_t j) {
                      return splat(e.narrow(e.load(lse.flat, lseRows[j])),
                                   laneVector);
                    },
                    [&](int64_t j) {
                      return splat(e.load(dq.flat, dqRows[j]), laneVector);
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

} // namespace

LogicalResult kernel_bodies::emitFlashAttention(Emitter &e, Operation *op,
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
             << i
             << " (operands, then results) is not stored as rows of "
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

bool isFlashGroup(Block &body) { return analyseFlashGroup(body).has_value(); }

LogicalResult emitFlashGroup(OpBuilder &b, Block &body, ValueRange inputs,
                             ValueRange yielded, ValueRange outputs) {
  std::optional<FlashGroupLayouts> g = analyseFlashGroup(body);
  assert(g && "emitFlashGroup on a block that is not a flash group");
  FlatBuffers buffers(b, g->flashOps.front()->getLoc(), body, inputs, yielded,
                      outputs);
  for (Operation *op : g->flashOps) {
    Emitter e(b, op->getLoc(),
              getElementTypeOrSelf(op->getResult(0).getType()));
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

} // namespace mlir::tg
