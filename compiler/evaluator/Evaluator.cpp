// The reference evaluator's driver: binds arguments, walks the function body
// op by op, checks what the verifiers cannot (index values), dispatches to
// the kernels and applies the declared-type rounding.
#include "tg/Evaluator/Evaluator.h"

#include "Kernels.h"
#include "tg/IR/TgOps.h"
#include "tg/runtime/Safetensors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::eval;

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double eval::roundToType(double value, Type type) {
  using ::tg::safetensors::DType;
  using ::tg::safetensors::roundTo;
  if (type.isF16())
    return roundTo(DType::F16, value);
  if (type.isBF16())
    return roundTo(DType::BF16, value);
  if (type.isF32())
    return roundTo(DType::F32, value);
  return value;
}

namespace {
using Results = FailureOr<std::vector<Tensor>>;

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

std::vector<int64_t> toVector(ArrayRef<int64_t> shape) {
  return std::vector<int64_t>(shape.begin(), shape.end());
}

int64_t normaliseAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

Results one(Tensor t) { return std::vector<Tensor>{std::move(t)}; }

/// x rotated by `rotation` (tg.rope's; back with `inverse`), or x itself
/// without one.
Tensor rotated(const Tensor &x, std::optional<RopeFrequencies> rotation,
               bool inverse = false) {
  if (!rotation)
    return x;
  int64_t dim = x.shape.size() == 4 ? x.shape[3] : 0;
  std::vector<double> frequencies;
  for (int64_t i = 0; i < dim / 2; ++i)
    frequencies.push_back(rotation->frequency(i, dim));
  return kernels::rope(x, frequencies, inverse);
}

class Interpreter {
public:
  explicit Interpreter(Arithmetic arithmetic) : arithmetic(arithmetic) {}

  Results run(func::FuncOp func, ArrayRef<Tensor> args);

private:
  const Tensor &get(Value v) const { return values.find(v)->second; }
  /// Binds `v` to `t`, rounding to v's element type in Declared mode.
  void bind(Value v, Tensor t);
  Results compute(Operation *op);
  Results constant(ConstantOp op);
  Results castOp(CastOp op);
  /// Fails unless every element of `t` is an integer in [0, bound).
  LogicalResult checkIndices(Operation *op, StringRef what, const Tensor &t,
                             int64_t bound);
  /// The block a rank's index selects (index / replicas), checked to lie in
  /// a whole tensor of `bound` elements along the dim (blocks of `size`).
  std::optional<int64_t> shardBlock(Operation *op, Value index,
                                    int64_t replicas, int64_t size,
                                    int64_t bound) {
    int64_t block = offsetOf(index) / replicas;
    if (block >= 0 && (block + 1) * size <= bound)
      return block;
    op->emitOpError("rank index ") << offsetOf(index) << " selects block "
                                   << block << ", outside the whole tensor";
    return std::nullopt;
  }
  /// The integer in a [1] offset or rank-index operand; 0 when absent.
  int64_t offsetOf(Value v) {
    return v ? static_cast<int64_t>(get(v).data[0]) : 0;
  }

  template <typename OpTy> Results unary(OpTy op, double (*fn)(double)) {
    return one(kernels::map(get(op.getInput()), fn));
  }
  template <typename OpTy>
  Results binary(OpTy op, double (*fn)(double, double)) {
    return one(kernels::binary(get(op.getLhs()), get(op.getRhs()),
                               shapeOf(op.getResult()), fn));
  }
  template <typename OpTy> Results reduce(OpTy op, kernels::Reduction kind) {
    const Tensor &x = get(op.getInput());
    SmallVector<int64_t> axes;
    for (int64_t axis : op.getAxes())
      axes.push_back(normaliseAxis(axis, x.shape.size()));
    return one(kernels::reduce(x, axes, kind, shapeOf(op.getResult())));
  }

  Arithmetic arithmetic;
  llvm::DenseMap<Value, Tensor> values;
};
} // namespace

void Interpreter::bind(Value v, Tensor t) {
  if (arithmetic == Arithmetic::Declared) {
    Type elementType = cast<RankedTensorType>(v.getType()).getElementType();
    for (double &x : t.data)
      x = roundToType(x, elementType);
  }
  values[v] = std::move(t);
}

LogicalResult Interpreter::checkIndices(Operation *op, StringRef what,
                                        const Tensor &t, int64_t bound) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    double v = t.data[i];
    if (v == std::floor(v) && v >= 0 && v < bound)
      continue;
    InFlightDiagnostic diag = op->emitOpError() << what << " value ";
    if (v == std::floor(v) && std::fabs(v) < 0x1p62)
      diag << static_cast<int64_t>(v);
    else
      diag << v;
    return diag << " at flat position " << i << " is out of range [0, "
                << bound << ")";
  }
  return success();
}

Results Interpreter::constant(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitOpError()
           << "has a value that is not a DenseElementsAttr, which the "
              "reference evaluator does not support";
  Tensor t{toVector(dense.getType().getShape()), {}};
  if (isa<FloatType>(dense.getElementType())) {
    for (APFloat f : dense.getValues<APFloat>()) {
      bool lost;
      f.convert(APFloat::IEEEdouble(), llvm::RoundingMode::NearestTiesToEven, &lost);
      t.data.push_back(f.convertToDouble());
    }
  } else {
    for (const APInt &i : dense.getValues<APInt>())
      t.data.push_back(static_cast<double>(i.getSExtValue()));
  }
  return one(std::move(t));
}

Results Interpreter::castOp(CastOp op) {
  Type from = op.getInput().getType().getElementType();
  Type to = op.getResult().getType().getElementType();
  const Tensor &x = get(op.getInput());
  if (auto intType = dyn_cast<IntegerType>(to)) {
    if (isa<FloatType>(from))
      return op.emitOpError() << "casts " << from << " to " << to
                              << "; only float <-> float and int -> float "
                                 "casts are supported";
    double limit = std::ldexp(1.0, intType.getWidth() - 1);
    for (double v : x.data)
      if (v < -limit || v >= limit)
        return op.emitOpError() << "value " << v << " does not fit in " << to;
  }
  return one(x);
}

Results Interpreter::compute(Operation *op) {
  using namespace kernels;
  return llvm::TypeSwitch<Operation *, Results>(op)
      // Constants, casts and views.
      .Case([&](ConstantOp o) { return constant(o); })
      .Case([&](CastOp o) { return castOp(o); })
      .Case([&](ReshapeOp o) {
        Tensor t = get(o.getInput());
        t.shape = toVector(shapeOf(o.getResult()));
        return one(std::move(t));
      })
      .Case([&](TransposeOp o) {
        return one(transpose(get(o.getInput()), o.getPermutation()));
      })
      .Case([&](BroadcastOp o) {
        return one(broadcast(get(o.getInput()), shapeOf(o.getResult())));
      })
      .Case([&](SliceOp o) {
        return one(slice(get(o.getInput()), o.getOffsets(), o.getSizes()));
      })
      .Case([&](PadOp o) {
        return one(pad(get(o.getInput()), o.getLow(), o.getHigh()));
      })
      .Case([&](ConcatOp o) {
        SmallVector<const Tensor *> inputs;
        for (Value v : o.getInputs())
          inputs.push_back(&get(v));
        int64_t rank = shapeOf(o.getResult()).size();
        return one(concat(inputs, normaliseAxis((int64_t)o.getAxis(), rank)));
      })
      // Elementwise.
      .Case([&](AddOp o) {
        return binary(o, [](double a, double b) { return a + b; });
      })
      .Case([&](SubOp o) {
        return binary(o, [](double a, double b) { return a - b; });
      })
      .Case([&](MulOp o) {
        return binary(o, [](double a, double b) { return a * b; });
      })
      .Case([&](DivOp o) {
        return binary(o, [](double a, double b) { return a / b; });
      })
      .Case([&](MaxOp o) { // NaN propagates, as in PyTorch
        return binary(o, [](double a, double b) {
          return a > b || std::isnan(a) ? a : b;
        });
      })
      .Case([&](MinOp o) {
        return binary(o, [](double a, double b) {
          return a < b || std::isnan(a) ? a : b;
        });
      })
      .Case([&](PowOp o) {
        return binary(o, [](double a, double b) { return std::pow(a, b); });
      })
      .Case([&](NegOp o) { return unary(o, [](double x) { return -x; }); })
      .Case([&](ExpOp o) {
        return unary(o, [](double x) { return std::exp(x); });
      })
      .Case([&](LogOp o) {
        return unary(o, [](double x) { return std::log(x); });
      })
      .Case([&](TanhOp o) {
        return unary(o, [](double x) { return std::tanh(x); });
      })
      .Case([&](SqrtOp o) {
        return unary(o, [](double x) { return std::sqrt(x); });
      })
      .Case([&](RsqrtOp o) {
        return unary(o, [](double x) { return 1 / std::sqrt(x); });
      })
      .Case([&](CosOp o) {
        return unary(o, [](double x) { return std::cos(x); });
      })
      .Case([&](SinOp o) {
        return unary(o, [](double x) { return std::sin(x); });
      })
      .Case([&](SiluOp o) { return unary(o, silu); })
      .Case([&](SiluGradOp o) {
        return one(kernels::binary(
            get(o.getInput()), get(o.getResultGrad()), shapeOf(o.getInput()),
            [](double x, double dy) { return siluDerivative(x) * dy; }));
      })
      .Case([&](GeluOp o) {
        bool tanh = o.getApproximate() == GeluApproximation::tanh;
        return one(map(get(o.getInput()),
                       [&](double x) { return gelu(x, tanh); }));
      })
      .Case([&](GeluGradOp o) {
        bool tanh = o.getApproximate() == GeluApproximation::tanh;
        return one(kernels::binary(
            get(o.getInput()), get(o.getResultGrad()), shapeOf(o.getInput()),
            [&](double x, double dy) { return geluDerivative(x, tanh) * dy; }));
      })
      // Reductions.
      .Case([&](ReduceSumOp o) { return reduce(o, Reduction::Sum); })
      .Case([&](ReduceMeanOp o) { return reduce(o, Reduction::Mean); })
      .Case([&](ReduceMaxOp o) { return reduce(o, Reduction::Max); })
      // Transformer ops.
      .Case([&](EmbeddingOp o) -> Results {
        const Tensor &table = get(o.getTable()), &ids = get(o.getIndices());
        // With an offset the table is a share: other indices are legal.
        if (!o.getOffset() &&
            failed(checkIndices(o, "index", ids, table.shape[0])))
          return failure();
        return one(embedding(table, ids, offsetOf(o.getOffset())));
      })
      .Case([&](EmbeddingGradOp o) -> Results {
        const Tensor &ids = get(o.getIndices());
        int64_t vocab = shapeOf(o.getTableGrad())[0];
        if (!o.getOffset() && failed(checkIndices(o, "index", ids, vocab)))
          return failure();
        return one(embeddingGrad(ids, get(o.getResultGrad()), vocab,
                                 offsetOf(o.getOffset())));
      })
      .Case([&](PickOp o) -> Results {
        const Tensor &x = get(o.getInput()), &ids = get(o.getIndices());
        if (!o.getOffset() &&
            failed(checkIndices(o, "index", ids, x.shape.back())))
          return failure();
        return one(pick(x, ids, offsetOf(o.getOffset())));
      })
      .Case([&](PickGradOp o) -> Results {
        const Tensor &ids = get(o.getIndices());
        int64_t vocab = shapeOf(o.getInputGrad()).back();
        if (!o.getOffset() && failed(checkIndices(o, "index", ids, vocab)))
          return failure();
        return one(pickGrad(ids, get(o.getResultGrad()), vocab,
                            offsetOf(o.getOffset())));
      })
      .Case([&](ShardSliceOp o) -> Results {
        int64_t dim = o.getDim(), size = shapeOf(o.getResult())[dim];
        std::optional<int64_t> block =
            shardBlock(o, o.getIndex(), o.getReplicas(), size,
                       shapeOf(o.getInput())[dim]);
        if (!block)
          return failure();
        return one(shardSlice(get(o.getInput()), dim, *block, size));
      })
      .Case([&](ShardUnsliceOp o) -> Results {
        int64_t dim = o.getDim(), size = shapeOf(o.getInput())[dim];
        std::optional<int64_t> block =
            shardBlock(o, o.getIndex(), o.getReplicas(), size,
                       shapeOf(o.getResult())[dim]);
        if (!block)
          return failure();
        return one(shardUnslice(get(o.getInput()), shapeOf(o.getResult()), dim,
                                *block));
      })
      .Case([&](GradAllReduceOp o) { return one(get(o.getInput())); })
      .Case([&](StopGradientOp o) { return one(get(o.getInput())); })
      .Case([&](MatmulOp o) {
        return one(matmul(get(o.getLhs()), get(o.getRhs()), o.getTransposeLhs(),
                          o.getTransposeRhs()));
      })
      .Case([&](LayerNormOp o) {
        return one(layerNorm(get(o.getInput()), get(o.getWeight()),
                             get(o.getBias()),
                             o.getEpsilon().convertToDouble()));
      })
      .Case([&](LayerNormGradOp o) {
        return Results(layerNormGrad(get(o.getInput()), get(o.getWeight()),
                                     get(o.getResultGrad()),
                                     o.getEpsilon().convertToDouble()));
      })
      .Case([&](RmsNormOp o) {
        return one(rmsNorm(get(o.getInput()), get(o.getWeight()),
                           o.getEpsilon().convertToDouble()));
      })
      .Case([&](RmsNormGradOp o) {
        return Results(rmsNormGrad(get(o.getInput()), get(o.getWeight()),
                                   get(o.getResultGrad()),
                                   o.getEpsilon().convertToDouble()));
      })
      .Case([&](SoftmaxOp o) { return one(softmax(get(o.getInput()))); })
      .Case([&](SoftmaxGradOp o) {
        return one(softmaxGrad(get(o.getResult()), get(o.getResultGrad())));
      })
      .Case([&](AttentionOp o) {
        return one(attention(get(o.getQuery()), get(o.getKey()),
                             get(o.getValue()), o.getScale().convertToDouble(),
                             o.getCausal(), o.getWindow()));
      })
      .Case([&](AttentionGradOp o) {
        return Results(attentionGrad(
            get(o.getQuery()), get(o.getKey()), get(o.getValue()),
            get(o.getResultGrad()), o.getScale().convertToDouble(),
            o.getCausal(), o.getWindow()));
      })
      .Case([&](FlashAttentionOp o) {
        Tensor q = rotated(get(o.getQuery()), o.getRope());
        Tensor k = rotated(get(o.getKey()), o.getRope());
        double scale = o.getScale().convertToDouble();
        return Results(std::vector<Tensor>{
            attention(q, k, get(o.getValue()), scale, o.getCausal(),
                      o.getWindow()),
            attentionLogSumExp(q, k, scale, o.getCausal(), o.getWindow())});
      })
      .Case([&](FlashAttentionGradOp o) {
        // The exact gradients: the reference does not depend on the
        // forward's result and log-sum-exp being right.
        std::vector<Tensor> grads = attentionGrad(
            rotated(get(o.getQuery()), o.getRope()),
            rotated(get(o.getKey()), o.getRope()), get(o.getValue()),
            get(o.getResultGrad()), o.getScale().convertToDouble(),
            o.getCausal(), o.getWindow());
        for (int i : {0, 1})
          grads[i] = rotated(grads[i], o.getRope(), /*inverse=*/true);
        return Results(std::move(grads));
      })
      .Case([&](RopeOp o) {
        return one(
            rotated(get(o.getInput()), o.getFrequencies(), o.getInverse()));
      })
      .Case([&](CrossEntropyOp o) -> Results {
        const Tensor &logits = get(o.getLogits()), &targets = get(o.getTargets());
        if (failed(checkIndices(o, "target", targets, logits.shape.back())))
          return failure();
        return one(crossEntropy(logits, targets));
      })
      .Case([&](CrossEntropyGradOp o) -> Results {
        const Tensor &logits = get(o.getLogits()), &targets = get(o.getTargets());
        if (failed(checkIndices(o, "target", targets, logits.shape.back())))
          return failure();
        return one(crossEntropyGrad(logits, targets, get(o.getLossGrad())));
      })
      // The evaluator runs one rank: a collective over an axis of size 1
      // (or on a module without a mesh) is the identity; over a larger axis
      // its result depends on ranks it does not run.
      .Case<AllReduceOp, ReduceScatterOp, AllGatherOp>([&](auto o) -> Results {
        std::optional<Mesh> mesh = getMesh(o);
        int64_t ranks =
            mesh ? mesh->getAxisSize(o.getAxis()).value_or(1) : 1;
        if (ranks != 1)
          return o.emitOpError("runs over mesh axis '")
                 << o.getAxis() << "' of size " << ranks
                 << ", but the reference evaluator runs one rank: evaluate "
                    "the single-device step (no --mesh) instead";
        return one(get(o.getInput()));
      })
      .Default([](Operation *op) -> Results {
        return op->emitOpError("is not supported by the reference evaluator");
      });
}

Results Interpreter::run(func::FuncOp func, ArrayRef<Tensor> args) {
  if (func.isExternal())
    return func.emitError() << "cannot evaluate external function @"
                            << func.getSymName();
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "the reference evaluator needs a single-block "
                               "function body";
  Block &body = func.getBody().front();
  if (args.size() != body.getNumArguments())
    return func.emitError() << "expected " << body.getNumArguments()
                            << " arguments, got " << args.size();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitError() << "argument #" << i << " has type "
                              << arg.getType()
                              << ", expected a static-shaped ranked tensor";
    if (ArrayRef<int64_t>(args[i].shape) != type.getShape() ||
        (int64_t)args[i].data.size() != type.getNumElements())
      return func.emitError()
             << "argument #" << i << " has shape ["
             << ArrayRef<int64_t>(args[i].shape) << "] with "
             << args[i].data.size() << " values, expected shape ["
             << type.getShape() << "] (" << type.getNumElements()
             << " values)";
    bind(arg, args[i]);
  }

  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(get(v));
      return results;
    }
    Results results = compute(&op);
    if (failed(results))
      return failure();
    for (auto [value, tensor] : llvm::zip_equal(op.getResults(), *results)) {
      tensor.shape = toVector(shapeOf(value));
      bind(value, std::move(tensor));
    }
  }
  return func.emitError() << "function body has no func.return";
}

FailureOr<std::vector<Tensor>> eval::evaluate(func::FuncOp func,
                                              ArrayRef<Tensor> args,
                                              Arithmetic arithmetic) {
  return Interpreter(arithmetic).run(func, args);
}
