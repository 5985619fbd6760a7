// tg-decompose-attention: tg.attention / tg.attention_grad as batched GEMMs,
// a scale, an additive causal mask and a row softmax (see Decompose.h).
#include "tg/Passes/Decompose.h"
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

/// The [rows, keys] additive causal mask for query length `queryLen`: row r is
/// query position t = r mod queryLen and sees keys s <= t (0), and with a
/// `window` W > 0 only t - W < s <= t; the others get -inf. Built as a raw
/// buffer: these constants can be large (T*S*G elements) and an APFloat per
/// element would be slow.
DenseElementsAttr causalMask(RankedTensorType type, int64_t queryLen,
                             int64_t window) {
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
    int64_t t = r % queryLen;
    for (int64_t s = 0; s < keys; ++s)
      if (s > t || (window > 0 && s <= t - window))
        std::memcpy(&raw[size_t(r * keys + s) * bytes], inf, bytes);
  }
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

class Decomposer {
public:
  Decomposer(func::FuncOp func, const KeepProbabilities &keep)
      : func(func), b(func.getContext()), keep(keep) {}

  LogicalResult run() {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
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

  /// What the forward and the gradient share: q' and the probabilities P.
  struct Probs {
    Value query, probs;
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

  /// q [B, Hq, T, D] viewed as [B, Hkv, G*T, D] (free: row-major reshape;
  /// none at all when G = 1).
  Value groupQueries(Value v, const Dims &d, Location loc) {
    if (d.group == 1)
      return v;
    return ReshapeOp::create(
        b, loc,
        tensor({d.batch, d.kvHeads, d.group * d.queryLen, d.headDim}, d), v);
  }

  Value scalar(double value, const Dims &d, Location loc) {
    auto type = tensor({}, d);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(d.element, value)));
  }

  /// The shared causal mask for these dims and window, created once per
  /// function at the top of its entry block.
  Value mask(const Dims &d, int64_t window, Location at) {
    auto type = tensor({d.group * d.queryLen, d.keyLen}, d);
    Value &slot = masks[{type, d.queryLen, window}];
    if (!slot) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&func.getBody().front());
      Location loc = NameLoc::get(
          b.getStringAttr(window > 0 ? "window_mask" : "causal_mask"), at);
      slot = ConstantOp::create(b, loc, causalMask(type, d.queryLen, window));
    }
    return slot;
  }

  /// The inverse of groupQueries for a result [B, Hkv, G*T, D] built by
  /// `make(loc)`: with G = 1 it is the result itself and gets `loc`.
  template <typename MakeFn>
  Value ungroup(const Dims &d, Type type, Location loc, Location groupedLoc,
                MakeFn make) {
    if (d.group == 1)
      return make(loc);
    return ReshapeOp::create(b, loc, type, make(groupedLoc));
  }

  /// P = softmax(scale * q' K^T [+ mask]) : [B, Hkv, G*T, S].
  Probs probabilities(const Namer &name, const Dims &d, Value query, Value key,
                      Value scale, bool causal, int64_t window) {
    Value q = groupQueries(query, d, name("q"));
    Value scores = MatmulOp::create(b, name("scores"), q, key,
                                    /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/true);
    Value scaled = MulOp::create(b, name("scaled"), scores, scale);
    // With a single key every query sees it: the mask would be all zeros.
    if (causal && d.keyLen > 1)
      scaled = AddOp::create(b, name("masked"), scaled,
                             mask(d, window, name.base));
    Value probs = SoftmaxOp::create(b, name("probs"), scaled);
    return {q, probs};
  }

  LogicalResult rewrite(AttentionOp op) {
    auto d = dimsOf(op, op.getQuery(), op.getKey());
    if (failed(d))
      return failure();
    Namer name{op.getLoc(), valueName(op.getResult()).str()};
    Value scale = scalar(op.getScale().convertToDouble(), *d, name("scale"));
    Probs p = probabilities(name, *d, op.getQuery(), op.getKey(), scale,
                            op.getCausal(), op.getWindow());
    forwardProbs[keyOf(op)] = p;
    Value result =
        ungroup(*d, op.getType(), op.getLoc(), name("pv"), [&](Location loc) {
          return MatmulOp::create(b, loc, p.probs, op.getValue(),
                                  /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/false);
        });
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
    Probs p = forwardProbs.lookup(keyOf(op));
    if (!p.probs || !keepProbabilities(op, *d))
      p = probabilities(name, *d, op.getQuery(), op.getKey(), scale,
                        op.getCausal(), op.getWindow());
    Value dOut = groupQueries(op.getResultGrad(), *d, name("dout"));
    // dV = P^T dO': the G*T contraction also sums the query heads of a group.
    Value dv = MatmulOp::create(b, name("dv"), p.probs, dOut,
                                /*transpose_lhs=*/true,
                                /*transpose_rhs=*/false);
    Value dProbs = MatmulOp::create(b, name("dprobs"), dOut, op.getValue(),
                                    /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/true);
    Value dScaled =
        SoftmaxGradOp::create(b, name("dscaled"), p.probs, dProbs);
    Value dScores = MulOp::create(b, name("dscores"), dScaled, scale);
    Value dq = ungroup(*d, op.getQueryGrad().getType(), name("dq"),
                       name("dq_grouped"), [&](Location loc) {
                         return MatmulOp::create(b, loc, dScores, op.getKey(),
                                                 /*transpose_lhs=*/false,
                                                 /*transpose_rhs=*/false);
                       });
    Value dk = MatmulOp::create(b, name("dk"), dScores, p.query,
                                /*transpose_lhs=*/true,
                                /*transpose_rhs=*/false);
    op.getQueryGrad().replaceAllUsesWith(dq);
    op.getKeyGrad().replaceAllUsesWith(dk);
    op.getValueGrad().replaceAllUsesWith(dv);
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
  /// (KeepProbabilities), with the reason as a remark.
  bool keepProbabilities(AttentionGradOp op, const Dims &d) {
    double mib = double(d.batch * d.heads * d.queryLen * d.keyLen) *
                 d.element.getIntOrFloatBitWidth() / 8 / (1 << 20);
    bool shortRows = keepsProbabilities(d.keyLen, d.headDim, keep);
    bool withinBudget = keep.budgetMib == 0 || keptMib + mib <= keep.budgetMib;
    bool kept = shortRows && withinBudget;
    if (kept)
      keptMib += mib;
    if (keep.remarks) {
      auto diag = op.emitRemark();
      diag << (kept ? "keeps" : "recomputes")
           << " the forward's attention probabilities ("
           << llvm::formatv("{0:F1}", mib) << " MiB): ";
      if (!shortRows || std::isfinite(keep.factor))
        diag << "keys per row " << d.keyLen << (shortRows ? " <= " : " > ")
             << llvm::formatv("{0:F1}", keep.factor) << " x head dim "
             << d.headDim;
      if (shortRows && keep.budgetMib != 0)
        diag << (std::isfinite(keep.factor) ? "; " : "")
             << (kept ? "" : "keeping them would exceed the budget: ")
             << llvm::formatv("{0:F1} of {1:F1} MiB kept", keptMib,
                              keep.budgetMib);
    }
    return kept;
  }

  func::FuncOp func;
  OpBuilder b;
  KeepProbabilities keep;
  /// The probabilities kept so far in the function.
  double keptMib = 0;
  llvm::DenseMap<std::tuple<Type, int64_t, int64_t>, Value> masks;
  llvm::DenseMap<ForwardKey, Probs> forwardProbs;
};

} // namespace

bool mlir::tg::keepsProbabilities(int64_t keys, int64_t headDim,
                                  const KeepProbabilities &options) {
  return keys <= options.factor * headDim;
}

LogicalResult mlir::tg::decomposeAttention(func::FuncOp func,
                                           const KeepProbabilities &keep) {
  if (func.isExternal())
    return success();
  return Decomposer(func, keep).run();
}
