// Verifiers and shape inference for the tg ops. Every diagnostic names the
// operand at fault and the shape that was expected, so a user can fix the
// frontend or the hand-written IR without reading this file.
#include "tg/IR/TgOps.h"
#include "tg/IR/FlashAttentionLimits.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

#include "tg/IR/TgOpsEnums.cpp.inc"

namespace {
/// Prints a shape as [a, b, c] for diagnostics.
struct ShapeStr {
  ArrayRef<int64_t> dims;
};
template <typename Stream>
Stream &operator<<(Stream &os, ShapeStr s) {
  os << "[";
  llvm::interleaveComma(s.dims, os);
  os << "]";
  return os;
}
ArrayRef<int64_t> dimsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Emits "'tg.OP' op MESSAGE" at `loc` (when given) and returns failure.
template <typename... Args>
LogicalResult fail(std::optional<Location> loc, StringRef opName,
                   Args &&...args) {
  return emitOptionalError(loc, "'tg.", opName, "' op ",
                           std::forward<Args>(args)...);
}

LogicalResult requireSameElementType(std::optional<Location> loc,
                                     StringRef opName, StringRef lhsName,
                                     Value lhs, StringRef rhsName, Value rhs) {
  if (elementTypeOf(lhs) != elementTypeOf(rhs))
    return fail(loc, opName, rhsName, " has element type ", elementTypeOf(rhs),
                ", expected ", elementTypeOf(lhs), " like ", lhsName);
  return success();
}

/// Requires `v` to be the rank-1 tensor [size] (a per-feature weight).
LogicalResult requireVector(std::optional<Location> loc, StringRef opName,
                            StringRef name, Value v, int64_t size) {
  ArrayRef<int64_t> dims = dimsOf(v);
  if (dims.size() != 1 || dims[0] != size)
    return fail(loc, opName, name, " has shape ", ShapeStr{dims},
                ", expected [", size, "] (the size of the input's last dim)");
  return success();
}

/// Normalises `axis` against `rank`, accepting negative values.
FailureOr<int64_t> normaliseAxis(std::optional<Location> loc, StringRef opName,
                                 int64_t axis, int64_t rank) {
  int64_t normalised = axis < 0 ? axis + rank : axis;
  if (normalised < 0 || normalised >= rank) {
    (void)fail(loc, opName, "axis ", axis, " is out of range for rank ", rank);
    return failure();
  }
  return normalised;
}
} // namespace

/// The numpy broadcast of two shapes (dims aligned at the end).
static FailureOr<SmallVector<int64_t>>
broadcastShapes(std::optional<Location> loc, StringRef opName,
                ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1) {
      (void)fail(loc, opName, "operand shapes ", ShapeStr{lhs}, " and ",
                 ShapeStr{rhs}, " do not broadcast: dim ", i, " is ", l,
                 " vs ", r, " (each dim must match or be 1)");
      return failure();
    }
    result[i] = l == 1 ? r : l;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Constants, casts and views
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "result shape " << ShapeStr{out.getShape()}
                         << " has " << out.getNumElements()
                         << " elements, expected " << in.getNumElements()
                         << " like the input " << ShapeStr{in.getShape()};
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type " << out.getElementType()
                         << " differs from the input's "
                         << in.getElementType() << "; use tg.cast";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> dims = dimsOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (perm.size() != dims.size() ||
      llvm::any_of(llvm::enumerate(sorted),
                   [](auto it) { return it.value() != (int64_t)it.index(); }))
    return fail(loc, "transpose", "permutation ", ShapeStr{perm},
                " is not a permutation of the input's ", dims.size(), " dims");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(dims[p]);
  types.push_back(
      RankedTensorType::get(shape, elementTypeOf(adaptor.getInput())));
  return success();
}

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  auto broadcast = broadcastShapes(getLoc(), "broadcast", in, out);
  if (failed(broadcast))
    return failure();
  if (ArrayRef<int64_t>(*broadcast) != out)
    return emitOpError() << "input " << ShapeStr{in}
                         << " does not broadcast to the result shape "
                         << ShapeStr{out};
  if (getInput().getType().getElementType() !=
      getResult().getType().getElementType())
    return emitOpError() << "result element type "
                         << getResult().getType().getElementType()
                         << " differs from the input's "
                         << getInput().getType().getElementType();
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> dims = dimsOf(adaptor.getInput());
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes();
  if (offsets.size() != dims.size() || sizes.size() != dims.size())
    return fail(loc, "slice", "offsets and sizes need one entry per input dim (",
                dims.size(), "), got ", offsets.size(), " and ", sizes.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (offsets[i] < 0 || sizes[i] < 0)
      return fail(loc, "slice", "dim ", i, ": offset ", offsets[i],
                  " and size ", sizes[i], " must be non-negative");
    // offsets[i] + sizes[i] could overflow: compare against the difference.
    if (sizes[i] > dims[i] || offsets[i] > dims[i] - sizes[i])
      return fail(loc, "slice", "dim ", i, ": offset ", offsets[i], " + size ",
                  sizes[i], " exceeds the input size ", dims[i]);
  }
  types.push_back(RankedTensorType::get(sizes, elementTypeOf(adaptor.getInput())));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> dims = dimsOf(adaptor.getInput());
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  if (low.size() != dims.size() || high.size() != dims.size())
    return fail(loc, "pad", "low and high need one entry per input dim (",
                dims.size(), "), got ", low.size(), " and ", high.size());
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (low[i] < 0 || high[i] < 0)
      return fail(loc, "pad", "dim ", i, ": low ", low[i], " and high ",
                  high[i], " padding must be non-negative");
    shape.push_back(low[i] + dims[i] + high[i]);
  }
  types.push_back(RankedTensorType::get(shape, elementTypeOf(adaptor.getInput())));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return fail(loc, "concat", "needs at least one input");
  ArrayRef<int64_t> first = dimsOf(inputs[0]);
  auto axis = normaliseAxis(loc, "concat", adaptor.getAxis(), first.size());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(first);
  for (auto [i, input] : llvm::enumerate(inputs.drop_front())) {
    ArrayRef<int64_t> dims = dimsOf(input);
    SmallVector<int64_t> expected(first);
    expected[*axis] = dims.size() == first.size() ? dims[*axis] : 0;
    if (dims != ArrayRef<int64_t>(expected))
      return fail(loc, "concat", "input #", i + 1, " has shape ", ShapeStr{dims},
                  ", expected ", ShapeStr{expected},
                  " (all dims but the axis must match input #0)");
    if (failed(requireSameElementType(loc, "concat", "input #0", inputs[0],
                                      "input #" + std::to_string(i + 1), input)))
      return failure();
    shape[*axis] += dims[*axis];
  }
  types.push_back(RankedTensorType::get(shape, elementTypeOf(inputs[0])));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBinary(std::optional<Location> loc, StringRef opName,
                                 Value lhs, Value rhs,
                                 SmallVectorImpl<Type> &types) {
  if (failed(requireSameElementType(loc, opName, "lhs", lhs, "rhs", rhs)))
    return failure();
  auto shape = broadcastShapes(loc, opName, dimsOf(lhs), dimsOf(rhs));
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, elementTypeOf(lhs)));
  return success();
}

#define TG_BINARY_INFER(OpClass, name)                                         \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferBinary(loc, name, adaptor.getLhs(), adaptor.getRhs(), types);  \
  }
TG_BINARY_INFER(AddOp, "add")
TG_BINARY_INFER(SubOp, "sub")
TG_BINARY_INFER(MulOp, "mul")
TG_BINARY_INFER(DivOp, "div")
TG_BINARY_INFER(MaxOp, "max")
TG_BINARY_INFER(MinOp, "min")
TG_BINARY_INFER(PowOp, "pow")
#undef TG_BINARY_INFER

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, StringRef opName,
                                 Value input, ArrayRef<int64_t> axes,
                                 bool keepDims, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> dims = dimsOf(input);
  llvm::SmallSet<int64_t, 4> reduced;
  for (int64_t axis : axes) {
    auto normalised = normaliseAxis(loc, opName, axis, dims.size());
    if (failed(normalised))
      return failure();
    if (!reduced.insert(*normalised).second)
      return fail(loc, opName, "axis ", axis, " is listed twice");
  }
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!reduced.contains(i))
      shape.push_back(dims[i]);
    else if (keepDims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, elementTypeOf(input)));
  return success();
}

/// The axes of a verified reduction, each in [0, rank).
static llvm::SmallDenseSet<int64_t> reducedAxes(Value input,
                                                ArrayRef<int64_t> axes) {
  int64_t rank = cast<ShapedType>(input.getType()).getRank();
  llvm::SmallDenseSet<int64_t> reduced;
  for (int64_t axis : axes)
    reduced.insert(axis < 0 ? axis + rank : axis);
  return reduced;
}

#define TG_REDUCE_INFER(OpClass, name)                                         \
  LogicalResult OpClass::inferReturnTypes(                                     \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferReduce(loc, name, adaptor.getInput(), adaptor.getAxes(),       \
                       adaptor.getKeepDims(), types);                          \
  }                                                                            \
  llvm::SmallDenseSet<int64_t> OpClass::getReducedAxes() {                     \
    return reducedAxes(getInput(), getAxes());                                 \
  }
TG_REDUCE_INFER(ReduceSumOp, "reduce_sum")
TG_REDUCE_INFER(ReduceMeanOp, "reduce_mean")
TG_REDUCE_INFER(ReduceMaxOp, "reduce_max")
#undef TG_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyRankIndex(Operation *op, Value index,
                                     StringRef what);

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> table = dimsOf(adaptor.getTable());
  if (table.size() != 2)
    return fail(loc, "embedding", "table has shape ", ShapeStr{table},
                ", expected [vocab, dim]");
  if (Value offset = adaptor.getOffset();
      offset && dimsOf(offset) != ArrayRef<int64_t>{1})
    return fail(loc, "embedding", "offset has shape ", ShapeStr{dimsOf(offset)},
                ", expected [1]");
  SmallVector<int64_t> shape(dimsOf(adaptor.getIndices()));
  shape.push_back(table[1]);
  types.push_back(RankedTensorType::get(shape, elementTypeOf(adaptor.getTable())));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (getOffset() && failed(verifyRankIndex(*this, getOffset(), "offset")))
    return failure();
  ArrayRef<int64_t> table = getTableGrad().getType().getShape();
  ArrayRef<int64_t> indices = getIndices().getType().getShape();
  ArrayRef<int64_t> grad = getResultGrad().getType().getShape();
  if (table.size() != 2)
    return emitOpError() << "table_grad has shape " << ShapeStr{table}
                         << ", expected [vocab, dim]";
  SmallVector<int64_t> expected(indices);
  expected.push_back(table[1]);
  if (failed(requireSameElementType(getLoc(), "embedding_grad", "table_grad",
                                    getTableGrad(), "result_grad",
                                    getResultGrad())))
    return failure();
  if (grad != ArrayRef<int64_t>(expected))
    return emitOpError() << "result_grad has shape " << ShapeStr{grad}
                         << ", expected " << ShapeStr{expected}
                         << " (indices shape + [dim])";
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
  ArrayRef<int64_t> a = dimsOf(lhs), b = dimsOf(rhs);
  if (a.size() < 2)
    return fail(loc, "matmul", "lhs has shape ", ShapeStr{a},
                ", expected rank >= 2 ([batch..., M, K])");
  if (b.size() != 2 && b.size() != a.size())
    return fail(loc, "matmul", "rhs has shape ", ShapeStr{b},
                ", expected rank 2 or rank ", a.size(), " like lhs");
  if (failed(requireSameElementType(loc, "matmul", "lhs", lhs, "rhs", rhs)))
    return failure();
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = a[a.size() - (tl ? 1 : 2)], k = a[a.size() - (tl ? 2 : 1)];
  int64_t kb = b[b.size() - (tr ? 1 : 2)], n = b[b.size() - (tr ? 2 : 1)];
  ArrayRef<int64_t> batch = a.drop_back(2);
  if (b.size() > 2 && b.drop_back(2) != batch)
    return fail(loc, "matmul", "rhs has batch dims ", ShapeStr{b.drop_back(2)},
                ", expected ", ShapeStr{batch}, " like lhs");
  if (k != kb)
    return fail(loc, "matmul", "rhs has shape ", ShapeStr{b},
                ", expected contraction size K = ", k, " in dim ",
                b.size() - (tr ? 1 : 2), " (lhs is ", ShapeStr{a},
                tl ? ", transposed" : "", ")");
  SmallVector<int64_t> shape(batch);
  shape.push_back(m);
  shape.push_back(n);
  types.push_back(RankedTensorType::get(shape, elementTypeOf(lhs)));
  return success();
}

/// Norm ops: `weight` (and `bias`) are vectors over the input's last dim.
static LogicalResult verifyNormOperands(std::optional<Location> loc,
                                        StringRef opName, Value input,
                                        ArrayRef<std::pair<StringRef, Value>>
                                            vectors) {
  ArrayRef<int64_t> dims = dimsOf(input);
  if (dims.empty())
    return fail(loc, opName, "input must have rank >= 1");
  for (auto [name, v] : vectors) {
    if (failed(requireVector(loc, opName, name, v, dims.back())) ||
        failed(requireSameElementType(loc, opName, "input", input, name, v)))
      return failure();
  }
  return success();
}

/// Requires a grad op's `result_grad` to have the type of the forward value
/// `like` (named `likeName`) it is the gradient of.
static LogicalResult requireGradLike(std::optional<Location> loc,
                                     StringRef opName, Value resultGrad,
                                     StringRef likeName, Value like) {
  if (resultGrad.getType() != like.getType())
    return fail(loc, opName, "result_grad has type ", resultGrad.getType(),
                ", expected ", like.getType(), " like ", likeName);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyNormOperands(loc, "layer_norm", adaptor.getInput(),
                                {{"weight", adaptor.getWeight()},
                                 {"bias", adaptor.getBias()}})))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  if (failed(verifyNormOperands(loc, "layer_norm_grad", adaptor.getInput(),
                                {{"weight", adaptor.getWeight()}})))
    return failure();
  if (failed(requireGradLike(loc, "layer_norm_grad", adaptor.getResultGrad(),
                             "input", adaptor.getInput())))
    return failure();
  types.append({adaptor.getInput().getType(), adaptor.getWeight().getType(),
                adaptor.getWeight().getType()});
  return success();
}

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(verifyNormOperands(loc, "rms_norm", adaptor.getInput(),
                                {{"weight", adaptor.getWeight()}})))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult RmsNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  if (failed(verifyNormOperands(loc, "rms_norm_grad", adaptor.getInput(),
                                {{"weight", adaptor.getWeight()}})))
    return failure();
  if (failed(requireGradLike(loc, "rms_norm_grad", adaptor.getResultGrad(),
                             "input", adaptor.getInput())))
    return failure();
  types.append({adaptor.getInput().getType(), adaptor.getWeight().getType()});
  return success();
}

/// An attention op's window while it is being built, when its attribute
/// may still be unset (the default, 0).
template <typename Adaptor> static int64_t windowOf(Adaptor &adaptor) {
  IntegerAttr window = adaptor.getWindowAttr();
  return window ? window.getInt() : 0;
}

/// Checks query [B, Hq, T, D] and key/value [B, Hkv, S, D] with Hq % Hkv ==
/// 0, and a window >= 0, only on causal attention.
static LogicalResult verifyAttentionOperands(std::optional<Location> loc,
                                             StringRef opName, Value query,
                                             Value key, Value value, bool causal,
                                             int64_t window) {
  if (window < 0 || (window > 0 && !causal))
    return fail(loc, opName, "window is ", window,
                ", expected 0 (none) or a positive window on causal attention");
  ArrayRef<int64_t> q = dimsOf(query);
  if (q.size() != 4)
    return fail(loc, opName, "query has shape ", ShapeStr{q},
                ", expected [batch, heads, seq, head_dim]");
  for (auto [name, v] : {std::pair<StringRef, Value>{"key", key},
                         std::pair<StringRef, Value>{"value", value}}) {
    ArrayRef<int64_t> d = dimsOf(v);
    if (d.size() != 4 || d[0] != q[0] || d[3] != q[3] || d[1] == 0 ||
        q[1] % d[1] != 0 || d[2] != dimsOf(key)[2])
      return fail(loc, opName, name, " has shape ", ShapeStr{d}, ", expected [",
                  q[0], ", kv_heads, seq, ", q[3],
                  "] with kv_heads dividing the ", q[1],
                  " query heads and key and value of equal length");
    if (failed(requireSameElementType(loc, opName, "query", query, name, v)))
      return failure();
  }
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyAttentionOperands(loc, "attention", adaptor.getQuery(),
                                     adaptor.getKey(), adaptor.getValue(),
                                     adaptor.getCausal(), windowOf(adaptor))))
    return failure();
  types.push_back(adaptor.getQuery().getType());
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  if (failed(verifyAttentionOperands(loc, "attention_grad", adaptor.getQuery(),
                                     adaptor.getKey(), adaptor.getValue(),
                                     adaptor.getCausal(), windowOf(adaptor))))
    return failure();
  if (failed(requireGradLike(loc, "attention_grad", adaptor.getResultGrad(),
                             "query", adaptor.getQuery())))
    return failure();
  types.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                adaptor.getValue().getType()});
  return success();
}

/// The type of a flash attention op's log-sum-exp for `query` [B, Hq, T, D]:
/// [B, Hq, T] in f32, or f64 for f64 queries (a bf16 or f16 log-sum-exp
/// would lose the probabilities' accuracy).
static RankedTensorType logSumExpType(Value query) {
  ArrayRef<int64_t> q = dimsOf(query);
  Type element = elementTypeOf(query);
  if (!element.isF64())
    element = Float32Type::get(query.getContext());
  return RankedTensorType::get(q.take_front(3), element);
}

/// The flash kernels' head dim limit (FlashAttentionLimits.h).
static LogicalResult verifyFlashHeadDim(std::optional<Location> loc,
                                        StringRef name, Value query) {
  int64_t dim = dimsOf(query).back();
  if (dim > kFlashAttentionMaxHeadDim)
    return fail(loc, name, "head dim ", dim, " is above the flash kernels' ",
                kFlashAttentionMaxHeadDim,
                " (a task holds 16 x D elements on the stack); use "
                "tg.attention, which is decomposed");
  return success();
}

/// A flash op's rotation: its attributes as tg.rope would take them, over
/// an even head dim.
template <typename Adaptor>
static LogicalResult verifyFlashRope(std::optional<Location> loc,
                                     StringRef name, Adaptor adaptor) {
  bool scalings = adaptor.getRopeScalingFactorAttr() ||
                  adaptor.getRopeLowFreqFactorAttr() ||
                  adaptor.getRopeHighFreqFactorAttr() ||
                  adaptor.getRopeOriginalMaxPositionsAttr();
  if (!adaptor.getRopeThetaAttr())
    return scalings ? fail(loc, name, "rope scalings without rope_theta")
                    : success();
  std::string invalid =
      RopeFrequencies::of(adaptor.getRopeThetaAttr(),
                          adaptor.getRopeScalingFactorAttr(),
                          adaptor.getRopeLowFreqFactorAttr(),
                          adaptor.getRopeHighFreqFactorAttr(),
                          adaptor.getRopeOriginalMaxPositionsAttr())
          .invalidity();
  if (!invalid.empty())
    return fail(loc, name, "rope: ", invalid);
  int64_t dim = dimsOf(adaptor.getQuery()).back();
  if (dim % 2 != 0)
    return fail(loc, name, "rope over an odd head dim ", dim,
                " (it rotates pairs (i, i + D/2))");
  return success();
}

/// cuDNN's fused attention as the runtime builds it: no rotation.
template <typename Adaptor>
static LogicalResult verifyFlashCudnn(std::optional<Location> loc,
                                      StringRef name, Adaptor adaptor) {
  if (adaptor.getCudnn() && adaptor.getRopeThetaAttr())
    return fail(loc, name,
                "cudnn with rope_theta: cuDNN's graph cannot "
                "rotate the queries and keys (drop cudnn, or "
                "apply tg.rope before the op)");
  return success();
}

LogicalResult FlashAttentionOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  if (failed(verifyAttentionOperands(loc, "flash_attention", adaptor.getQuery(),
                                     adaptor.getKey(), adaptor.getValue(),
                                     adaptor.getCausal(), windowOf(adaptor))) ||
      failed(verifyFlashHeadDim(loc, "flash_attention", adaptor.getQuery())) ||
      failed(verifyFlashRope(loc, "flash_attention", adaptor)) ||
      failed(verifyFlashCudnn(loc, "flash_attention", adaptor)))
    return failure();
  types.append({adaptor.getQuery().getType(), logSumExpType(adaptor.getQuery())});
  return success();
}

LogicalResult FlashAttentionGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  StringRef name = "flash_attention_grad";
  if (failed(verifyAttentionOperands(loc, name, adaptor.getQuery(),
                                     adaptor.getKey(), adaptor.getValue(),
                                     adaptor.getCausal(), windowOf(adaptor))) ||
      failed(verifyFlashHeadDim(loc, name, adaptor.getQuery())) ||
      failed(verifyFlashRope(loc, name, adaptor)) ||
      failed(verifyFlashCudnn(loc, name, adaptor)))
    return failure();
  auto queryType = cast<RankedTensorType>(adaptor.getQuery().getType());
  ArrayRef<int64_t> q = queryType.getShape();
  Type expected = adaptor.getResultTokens()
                      ? RankedTensorType::get({q[0], q[2], q[1], q[3]},
                                              queryType.getElementType())
                      : queryType;
  if (adaptor.getResult().getType() != expected)
    return fail(loc, name, "result has type ", adaptor.getResult().getType(),
                ", expected ", expected,
                adaptor.getResultTokens() ? " (query transposed to [batch, seq, "
                                            "heads, head_dim]: result_tokens)"
                                          : " like query");
  if (failed(requireGradLike(loc, name, adaptor.getResultGrad(), "query",
                             adaptor.getQuery())))
    return failure();
  RankedTensorType lse = logSumExpType(adaptor.getQuery());
  if (adaptor.getLogsumexp().getType() != lse)
    return fail(loc, name, "logsumexp has type ", adaptor.getLogsumexp().getType(),
                ", expected ", lse, " (flash_attention's second result)");
  types.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                adaptor.getValue().getType()});
  return success();
}

LogicalResult RopeOp::verify() {
  ArrayRef<int64_t> dims = getInput().getType().getShape();
  if (dims.size() != 4 || dims[3] % 2 != 0)
    return emitOpError() << "input has shape " << ShapeStr{dims}
                         << ", expected [batch, heads, seq, head_dim] with an "
                            "even head_dim";
  std::string invalid = getFrequencies().invalidity();
  if (!invalid.empty())
    return emitOpError() << invalid;
  return success();
}

/// Checks logits [..., V] against targets [...].
static LogicalResult verifyCrossEntropyOperands(std::optional<Location> loc,
                                                StringRef opName, Value logits,
                                                Value targets) {
  ArrayRef<int64_t> l = dimsOf(logits), t = dimsOf(targets);
  if (l.size() < 2)
    return fail(loc, opName, "logits have shape ", ShapeStr{l},
                ", expected rank >= 2 ([..., vocab])");
  if (l.drop_back() != t)
    return fail(loc, opName, "targets have shape ", ShapeStr{t},
                ", expected ", ShapeStr{l.drop_back()},
                " (the logits shape without the vocab dim)");
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  if (failed(verifyCrossEntropyOperands(loc, "cross_entropy",
                                        adaptor.getLogits(),
                                        adaptor.getTargets())))
    return failure();
  types.push_back(RankedTensorType::get({}, elementTypeOf(adaptor.getLogits())));
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(verifyCrossEntropyOperands(getLoc(), "cross_entropy_grad",
                                        getLogits(), getTargets())))
    return failure();
  return requireSameElementType(getLoc(), "cross_entropy_grad", "logits",
                                getLogits(), "loss_grad", getLossGrad());
}

#define GET_OP_CLASSES
#include "tg/IR/TgOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// The size of the mesh axis a collective runs over (1 without a mesh).
static FailureOr<int64_t> collectiveAxisSize(Operation *op, StringRef axis) {
  std::optional<Mesh> mesh = getMesh(op);
  if (!mesh)
    return 1;
  if (std::optional<int64_t> size = mesh->getAxisSize(axis))
    return *size;
  return op->emitOpError("runs over mesh axis '")
         << axis << "', which the module's mesh (" << kMeshAxesAttr << " = "
         << mesh->axes << ") does not have; use one of its axes";
}

LogicalResult AllReduceOp::verify() {
  return collectiveAxisSize(*this, getAxis());
}

/// `whole` is `block` with dim 0 multiplied by the axis size.
static LogicalResult verifyBlocks(Operation *op, StringRef axis,
                                  RankedTensorType whole,
                                  RankedTensorType block) {
  FailureOr<int64_t> size = collectiveAxisSize(op, axis);
  if (failed(size))
    return failure();
  if (whole.getRank() == 0 || block.getRank() != whole.getRank() ||
      whole.getShape().drop_front() != block.getShape().drop_front() ||
      whole.getDimSize(0) != block.getDimSize(0) * *size ||
      whole.getElementType() != block.getElementType())
    return op->emitOpError() << "over '" << axis << "' (" << *size
                             << " ranks) needs " << whole
                             << " to be that many blocks of " << block
                             << " along dim 0";
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  return verifyBlocks(*this, getAxis(), getInput().getType(),
                      getResult().getType());
}

LogicalResult AllGatherOp::verify() {
  return verifyBlocks(*this, getAxis(), getResult().getType(),
                      getInput().getType());
}

//===----------------------------------------------------------------------===//
// Partitioned programs
//===----------------------------------------------------------------------===//

/// `index` of a rank-dependent op: one integer, the rank's index on an axis.
static LogicalResult verifyRankIndex(Operation *op, Value index,
                                     StringRef what) {
  auto type = cast<RankedTensorType>(index.getType());
  if (type.getRank() != 1 || type.getDimSize(0) != 1)
    return op->emitOpError() << what << " has type " << type
                             << ", expected a [1] index tensor";
  return success();
}

/// The shapes of tg.shard_slice's `whole` input and its `block` result.
static LogicalResult verifyShardBlock(Operation *op, RankedTensorType whole,
                                      RankedTensorType block, int64_t dim) {
  if (whole.getRank() != block.getRank() || dim >= whole.getRank())
    return op->emitOpError() << "dim " << dim << " is not a dim of " << whole
                             << " and " << block;
  for (int64_t i = 0; i < whole.getRank(); ++i)
    if (i != dim && whole.getDimSize(i) != block.getDimSize(i))
      return op->emitOpError() << "block " << block << " and whole tensor "
                               << whole << " differ outside dim " << dim;
  if (block.getDimSize(dim) == 0 ||
      whole.getDimSize(dim) % block.getDimSize(dim) != 0)
    return op->emitOpError() << "dim " << dim << " of " << whole
                             << " is not a whole number of blocks of "
                             << block.getDimSize(dim);
  if (whole.getElementType() != block.getElementType())
    return op->emitOpError() << "element types differ: " << whole << ", "
                             << block;
  return success();
}

LogicalResult ShardSliceOp::verify() {
  if (failed(verifyRankIndex(*this, getIndex(), "index")))
    return failure();
  return verifyShardBlock(*this, getInput().getType(), getResult().getType(),
                          getDim());
}

LogicalResult ShardUnsliceOp::verify() {
  if (failed(verifyRankIndex(*this, getIndex(), "index")))
    return failure();
  return verifyShardBlock(*this, getResult().getType(), getInput().getType(),
                          getDim());
}

/// tg.pick and tg.pick_grad: `table` [..., V] against `indices` [...].
static LogicalResult verifyPick(Operation *op, RankedTensorType table,
                                RankedTensorType picked, Value indices,
                                Value offset) {
  if (offset && failed(verifyRankIndex(op, offset, "offset")))
    return failure();
  ArrayRef<int64_t> shape = table.getShape();
  auto indexShape = cast<RankedTensorType>(indices.getType()).getShape();
  if (shape.empty() || shape.drop_back() != indexShape ||
      picked.getShape() != indexShape)
    return op->emitOpError() << "expects [..., V] " << table
                             << " with indices and picked values of its "
                                "leading shape, got indices "
                             << indices.getType() << " and " << picked;
  if (table.getElementType() != picked.getElementType())
    return op->emitOpError() << "element types differ: " << table << ", "
                             << picked;
  return success();
}

LogicalResult PickOp::verify() {
  return verifyPick(*this, getInput().getType(), getResult().getType(),
                    getIndices(), getOffset());
}

LogicalResult PickGradOp::verify() {
  return verifyPick(*this, getInputGrad().getType(), getResultGrad().getType(),
                    getIndices(), getOffset());
}
