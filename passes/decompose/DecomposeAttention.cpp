// tg-decompose-attention: tg.attention / tg.attention_grad as batched GEMMs,
// a scale, an additive causal mask and a row softmax (see Decompose.h).
#include "tg/Passes/Decompose.h"
#include "tg/Passes/FlopCount.h"
#include "tg/Passes/Interface.h"
#include "tg/IR/AttentionVisibility.h"
#include "tg/IR/ValueNames.h"
#include "tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Locations for the values replacing one attention op: "<name>_<suffix>",
/// wrapping the op's own location (left as is when the op has no name).
struct Namer {
  Location base;
  std::string name;
  Location operator()(StringRef suffix) const {
    return derivedLoc(base, name, "", "_" + suffix);
  }
};

/// The rows [queryBegin, queryEnd) of a query (or output) and the keys
/// [keyBegin, keyEnd) any of them sees (all of both without causal blocks).
struct Span {
  int64_t queryBegin, queryEnd, keyBegin, keyEnd;
  int64_t queries() const { return queryEnd - queryBegin; }
  int64_t keys() const { return keyEnd - keyBegin; }
};

/// The [rows, keys] additive causal mask of `span`, rows of `span.queries()`
/// positions (row r is query position t = queryBegin + r mod queries, one
/// run of rows per query head of a group) and columns keys keyBegin + c:
/// 0 where t sees the key (visibleKeyRange), else -inf. Built as a raw
/// buffer: these constants can be large (T*S*G elements) and an APFloat per
/// element would be slow.
DenseElementsAttr causalMask(RankedTensorType type, const Span &span,
                             int64_t keyLen, int64_t window) {
  auto elem = cast<FloatType>(type.getElementType());
  unsigned bytes = elem.getWidth() / 8;
  APInt bits = APFloat::getInf(elem.getFloatSemantics(), /*Negative=*/true)
                   .bitcastToAPInt();
  uint16_t inf16 = (uint16_t)bits.getZExtValue();
  uint32_t inf32 = (uint32_t)bits.getZExtValue();
  uint64_t inf64 = bits.getZExtValue();
  const void *inf = bytes == 2 ? (const void *)&inf16
                    : bytes == 4 ? (const void *)&inf32
                                 : (const void *)&inf64;
  int64_t rows = type.getDimSize(0), keys = type.getDimSize(1);
  std::vector<char> raw(size_t(rows * keys) * bytes, 0); // +0.0 is all zeros
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = span.queryBegin + r % span.queries();
    auto [first, end] = visibleKeyRange(t, keyLen, /*causal=*/true, window);
    for (int64_t c = 0; c < keys; ++c) {
      int64_t s = span.keyBegin + c;
      if (s < first || s >= end)
        std::memcpy(&raw[size_t(r * keys + c) * bytes], inf, bytes);
    }
  }
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

/// Whether some query of `span` does not see some key of it.
/// (The first query sees the fewest later keys, the last the fewest earlier
/// ones.)
bool masksSome(const Span &span, int64_t keyLen, int64_t window) {
  int64_t endOfFirst =
      visibleKeyRange(span.queryBegin, keyLen, /*causal=*/true, window).second;
  int64_t firstOfLast =
      visibleKeyRange(span.queryEnd - 1, keyLen, /*causal=*/true, window).first;
  return endOfFirst < span.keyEnd || firstOfLast > span.keyBegin;
}

class Decomposer {
public:
  Decomposer(func::FuncOp func, const DecomposeAttentionOptions &options)
      : func(func), b(func.getContext()), options(options) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    // The products replacing the ops may do less than the model states
    // (kept probabilities, causal blocks): record the model's count first.
    if (!ops.empty() && !func->hasAttr(kModelFlopsAttr))
      func->setAttr(kModelFlopsAttr,
                    b.getI64IntegerAttr(countMatmulFlops(func)));
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      if (auto fwd = dyn_cast<AttentionOp>(op)) {
        if (failed(rewrite(fwd)))
          return failure();
      } else if (failed(rewrite(cast<AttentionGradOp>(op)))) {
        return failure();
      }
    }
    return success();
  }

private:
  /// Shapes of one attention op, all static.
  struct Dims {
    int64_t batch, heads, kvHeads, queryLen, keyLen, headDim, group;
    Type element;
  };

  /// What the forward and the gradient share, per span: its rows of q' and
  /// of K and V, and its probabilities P.
  struct Probs {
    Value query, key, value, probs;
  };

  static FailureOr<Dims> dimsOf(Operation *op, Value query, Value key) {
    auto q = cast<RankedTensorType>(query.getType());
    auto k = cast<RankedTensorType>(key.getType());
    if (!q.hasStaticShape() || !k.hasStaticShape()) {
      op->emitOpError("needs static query and key shapes to be decomposed");
      return failure();
    }
    Dims d{q.getDimSize(0), q.getDimSize(1), k.getDimSize(1), q.getDimSize(2),
           k.getDimSize(2), q.getDimSize(3), /*group=*/0, q.getElementType()};
    d.group = d.heads / d.kvHeads;
    return d;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, const Dims &d) const {
    return RankedTensorType::get(shape, d.element);
  }

  /// The spans of an op: the whole op, or with a causal mask and at least
  /// two blocks of `minBlockQueries` queries, up to `causalBlocks` blocks of
  /// queries, each with only the keys its queries see (with top-left
  /// causality, block i of n sees the first (i+1)/n of them).
  SmallVector<Span> spansOf(const Dims &d, bool causal, int64_t window) const {
    Span all{0, d.queryLen, 0, d.keyLen};
    int64_t count =
        causal ? std::min(options.causalBlocks,
                          d.queryLen / std::max<int64_t>(options.minBlockQueries, 1))
               : 1;
    if (count < 2)
      return {all};
    SmallVector<Span> spans;
    for (int64_t i = 0; i < count; ++i) {
      int64_t begin = d.queryLen * i / count, end = d.queryLen * (i + 1) / count;
      int64_t keyBegin =
          visibleKeyRange(begin, d.keyLen, /*causal=*/true, window).first;
      int64_t keyEnd =
          visibleKeyRange(end - 1, d.keyLen, /*causal=*/true, window).second;
      if (keyEnd <= keyBegin) // a block that sees no key: leave the op whole
        return {all};
      spans.push_back({begin, end, keyBegin, keyEnd});
    }
    return spans;
  }
  /// Positions [begin, end) of dim 2 of a [B, H, L, D] tensor (itself when
  /// that is all of it).
  Value positions(Value v, int64_t begin, int64_t end, Location loc) {
    auto type = cast<RankedTensorType>(v.getType());
    if (begin == 0 && end == type.getDimSize(2))
      return v;
    SmallVector<int64_t> offsets{0, 0, begin, 0};
    SmallVector<int64_t> sizes(type.getShape());
    sizes[2] = end - begin;
    return SliceOp::create(b, loc, v, offsets, sizes);
  }
  /// A value's suffix, with the span's index where there are several.
  static std::string suffix(StringRef what, size_t span, size_t spans) {
    return spans == 1 ? what.str() : (what + "_b" + Twine(span)).str();
  }

  /// q [B, Hq, T, D] viewed as [B, Hkv, G*T, D] (free: row-major reshape;
  /// none at all when G = 1).
  Value groupQueries(Value v, const Dims &d, Location loc) {
    if (d.group == 1)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(
        b, loc,
        tensor({d.batch, d.kvHeads, d.group * type.getDimSize(2), d.headDim},
               d),
        v);
  }

  Value scalar(double value, const Dims &d, Location loc) {
    auto type = tensor({}, d);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(d.element, value)));
  }

  /// The shared causal mask of these dims, span and window, created once
  /// per function at the top of its entry block.
  Value mask(const Dims &d, const Span &span, int64_t window, Location at) {
    auto type = tensor({d.group * span.queries(), span.keys()}, d);
    Value &slot = masks[{type, span.queryBegin, span.queryEnd, span.keyBegin,
                         window}];
    if (!slot) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&func.getBody().front());
      Location loc = NameLoc::get(
          b.getStringAttr(window > 0 ? "window_mask" : "causal_mask"), at);
      slot = ConstantOp::create(b, loc,
                                causalMask(type, span, d.keyLen, window));
    }
    return slot;
  }

  /// The inverse of groupQueries for a result [B, Hkv, G*rows, D] built by
  /// `make(loc)`: with G = 1 it is the result itself and gets `loc`.
  template <typename MakeFn>
  Value ungroup(const Dims &d, Type type, Location loc, Location groupedLoc,
                MakeFn make) {
    if (d.group == 1)
      return make(loc);
    return ReshapeOp::create(b, loc, type, make(groupedLoc));
  }

  /// [B, H, rows, D] of the element type.
  RankedTensorType rowsType(const Dims &d, int64_t heads, int64_t rows) const {
    return tensor({d.batch, heads, rows, d.headDim}, d);
  }

  /// Per span: P = softmax(scale * q' K^T [+ mask]) : [B, Hkv, G*t, s] over
  /// its t queries and s keys.
  SmallVector<Probs> probabilities(const Namer &name, const Dims &d,
                                   ArrayRef<Span> spans, Value query,
                                   Value key, Value value, Value scale,
                                   bool causal, int64_t window) {
    SmallVector<Probs> all;
    for (auto [i, span] : llvm::enumerate(spans)) {
      auto named = [&](StringRef what) {
        return name(suffix(what, i, spans.size()));
      };
      Value rows = positions(query, span.queryBegin, span.queryEnd,
                             named("q_rows"));
      Value q = groupQueries(rows, d, named("q"));
      Value k = positions(key, span.keyBegin, span.keyEnd, named("k_rows"));
      Value v = positions(value, span.keyBegin, span.keyEnd, named("v_rows"));
      Value scores = MatmulOp::create(b, named("scores"), q, k,
                                      /*transpose_lhs=*/false,
                                      /*transpose_rhs=*/true);
      Value scaled = MulOp::create(b, named("scaled"), scores, scale);
      if (causal && masksSome(span, d.keyLen, window))
        scaled = AddOp::create(b, named("masked"), scaled,
                               mask(d, span, window, name.base));
      Value probs = SoftmaxOp::create(b, named("probs"), scaled);
      all.push_back({q, k, v, probs});
    }
    return all;
  }

  /// Rows of [B, H, rows_i, D] pieces in order along dim 2, as one tensor.
  Value joinRows(ArrayRef<Value> pieces, Location loc) {
    if (pieces.size() == 1)
      return pieces.front();
    return ConcatOp::create(b, loc, pieces, /*axis=*/2);
  }
  /// The sum of [B, H, keys_i, D] pieces, each zero-padded to the key
  /// length from its span's first key.
  Value sumOverKeys(ArrayRef<Value> pieces, ArrayRef<Span> spans,
                    const Dims &d, const Namer &name, StringRef what) {
    if (pieces.size() == 1)
      return pieces.front();
    Value total;
    for (auto [i, piece] : llvm::enumerate(pieces)) {
      const Span &span = spans[i];
      Value padded = piece;
      if (span.keyBegin != 0 || span.keyEnd != d.keyLen)
        padded = PadOp::create(
            b, name(suffix(what.str() + "_padded", i, spans.size())), piece,
            SmallVector<int64_t>{0, 0, span.keyBegin, 0},
            SmallVector<int64_t>{0, 0, d.keyLen - span.keyEnd, 0});
      total = total ? AddOp::create(b, i + 1 == pieces.size() ? name(what)
                                       : name(suffix(what.str() + "_sum", i,
                                                     spans.size())),
                                    total, padded)
                    : padded;
    }
    return total;
  }

  LogicalResult rewrite(AttentionOp op) {
    auto d = dimsOf(op, op.getQuery(), op.getKey());
    if (failed(d))
      return failure();
    Namer name{op.getLoc(), valueName(op.getResult()).str()};
    Value scale = scalar(op.getScale().convertToDouble(), *d, name("scale"));
    SmallVector<Span> spans = spansOf(*d, op.getCausal(), op.getWindow());
    SmallVector<Probs> probs =
        probabilities(name, *d, spans, op.getQuery(), op.getKey(),
                      op.getValue(), scale, op.getCausal(), op.getWindow());
    forwardProbs[keyOf(op)] = probs;
    SmallVector<Value> outs;
    for (auto [i, p] : llvm::enumerate(probs)) {
      Location loc = spans.size() == 1 ? op.getLoc()
                                       : name(suffix("out", i, spans.size()));
      outs.push_back(ungroup(
          *d, rowsType(*d, d->heads, spans[i].queries()), loc,
          name(suffix("pv", i, spans.size())), [&](Location at) {
            return MatmulOp::create(b, at, p.probs, p.value,
                                    /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/false);
          }));
    }
    Value result = joinRows(outs, op.getLoc());
    op.getResult().replaceAllUsesWith(result);
    op.erase();
    return success();
  }

  LogicalResult rewrite(AttentionGradOp op) {
    auto d = dimsOf(op, op.getQuery(), op.getKey());
    if (failed(d))
      return failure();
    Namer name{op.getLoc(), valueName(op.getQueryGrad()).str()};
    Value scale = scalar(op.getScale().convertToDouble(), *d, name("scale"));
    SmallVector<Span> spans = spansOf(*d, op.getCausal(), op.getWindow());
    SmallVector<Probs> probs = forwardProbs.lookup(keyOf(op));
    if (probs.empty() || !keepProbabilities(op, *d, spans))
      probs = probabilities(name, *d, spans, op.getQuery(), op.getKey(),
                            op.getValue(), scale, op.getCausal(),
                            op.getWindow());
    SmallVector<Value> dqs, dks, dvs;
    for (auto [i, p] : llvm::enumerate(probs)) {
      const Span &span = spans[i];
      auto named = [&](StringRef what) {
        return name(suffix(what, i, spans.size()));
      };
      Value dOut = groupQueries(
          positions(op.getResultGrad(), span.queryBegin, span.queryEnd,
                    named("dout_rows")),
          *d, named("dout"));
      // dV = P^T dO': the G*t contraction also sums the query heads of a
      // group.
      dvs.push_back(MatmulOp::create(b, named("dv"), p.probs, dOut,
                                     /*transpose_lhs=*/true,
                                     /*transpose_rhs=*/false));
      Value dProbs = MatmulOp::create(b, named("dprobs"), dOut, p.value,
                                      /*transpose_lhs=*/false,
                                      /*transpose_rhs=*/true);
      Value dScaled =
          SoftmaxGradOp::create(b, named("dscaled"), p.probs, dProbs);
      Value dScores = MulOp::create(b, named("dscores"), dScaled, scale);
      dqs.push_back(ungroup(*d, rowsType(*d, d->heads, span.queries()),
                            named("dq"), named("dq_grouped"),
                            [&](Location loc) {
                              return MatmulOp::create(b, loc, dScores, p.key,
                                                      /*transpose_lhs=*/false,
                                                      /*transpose_rhs=*/false);
                            }));
      dks.push_back(MatmulOp::create(b, named("dk"), dScores, p.query,
                                     /*transpose_lhs=*/true,
                                     /*transpose_rhs=*/false));
    }
    op.getQueryGrad().replaceAllUsesWith(joinRows(dqs, name("dq")));
    op.getKeyGrad().replaceAllUsesWith(sumOverKeys(dks, spans, *d, name, "dk"));
    op.getValueGrad().replaceAllUsesWith(
        sumOverKeys(dvs, spans, *d, name, "dv"));
    op.erase();
    return success();
  }

  /// What makes a forward's P the one its gradient needs: query, key,
  /// scale (its bits), causal, window.
  using ForwardKey = std::tuple<Value, Value, uint64_t, int64_t, int64_t>;
  template <typename Op> static ForwardKey keyOf(Op op) {
    return {op.getQuery(), op.getKey(),
            op.getScale().bitcastToAPInt().getZExtValue(),
            int64_t(op.getCausal()), op.getWindow()};
  }

  /// Whether the gradient `op`, whose forward was decomposed, reuses its P
  /// (DecomposeAttentionOptions), with the reason as a remark.
  bool keepProbabilities(AttentionGradOp op, const Dims &d,
                         ArrayRef<Span> spans) {
    int64_t elements = 0;
    for (const Span &span : spans)
      elements += d.batch * d.heads * span.queries() * span.keys();
    double mib =
        double(elements) * d.element.getIntOrFloatBitWidth() / 8 / (1 << 20);
    bool shortRows = keepsProbabilities(d.keyLen, d.headDim, options);
    bool withinBudget =
        options.budgetMib == 0 || keptMib + mib <= options.budgetMib;
    bool kept = shortRows && withinBudget;
    if (kept)
      keptMib += mib;
    if (options.remarks) {
      auto diag = op.emitRemark();
      diag << (kept ? "keeps" : "recomputes")
           << " the forward's attention probabilities ("
           << llvm::formatv("{0:F1}", mib) << " MiB): ";
      if (!shortRows || std::isfinite(options.factor))
        diag << "keys per row " << d.keyLen << (shortRows ? " <= " : " > ")
             << llvm::formatv("{0:F1}", options.factor) << " x head dim "
             << d.headDim;
      if (shortRows && options.budgetMib != 0)
        diag << (std::isfinite(options.factor) ? "; " : "")
             << (kept ? "" : "keeping them would exceed the budget: ")
             << llvm::formatv("{0:F1} of {1:F1} MiB kept", keptMib,
                              options.budgetMib);
    }
    return kept;
  }

  func::FuncOp func;
  OpBuilder b;
  DecomposeAttentionOptions options;
  /// The probabilities kept so far in the function.
  double keptMib = 0;
  /// By type (rows and keys), first query, last query, first key, window.
  llvm::DenseMap<std::tuple<Type, int64_t, int64_t, int64_t, int64_t>, Value>
      masks;
  llvm::DenseMap<ForwardKey, SmallVector<Probs>> forwardProbs;
};

} // namespace

bool mlir::tg::keepsProbabilities(int64_t keys, int64_t headDim,
                                  const DecomposeAttentionOptions &options) {
  return keys <= options.factor * headDim;
}

LogicalResult mlir::tg::decomposeAttention(
    func::FuncOp func, const DecomposeAttentionOptions &options) {
  if (func.isExternal())
    return success();
  return Decomposer(func, options).run();
}
