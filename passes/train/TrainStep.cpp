#include "tg/Passes/TrainStep.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::tg;

StringRef mlir::tg::stringifyLrSchedule(LrSchedule schedule) {
  return schedule == LrSchedule::Cosine ? "cosine" : "constant";
}

std::optional<LrSchedule> mlir::tg::parseLrSchedule(StringRef name) {
  if (name == "constant")
    return LrSchedule::Constant;
  if (name == "cosine")
    return LrSchedule::Cosine;
  return std::nullopt;
}

LogicalResult mlir::tg::verifyTrainStepOptions(
    const TrainStepOptions &c, function_ref<InFlightDiagnostic()> emitError) {
  auto bad = [&](StringRef option) {
    InFlightDiagnostic diag = emitError();
    diag << "tg-build-train-step: option '" << option << "' ";
    return diag;
  };
  if (c.batchSize <= 0)
    return bad("batch-size") << "must be > 0, got " << c.batchSize;
  if (c.seqLen <= 0)
    return bad("seq-len") << "must be > 0, got " << c.seqLen;
  if (c.microBatches <= 0)
    return bad("micro-batches") << "must be > 0, got " << c.microBatches;
  if (c.dataParallel <= 0)
    return bad("data-parallel") << "must be > 0, got " << c.dataParallel;
  if (c.zeroStage != 0 && c.zeroStage != 1)
    return bad("zero") << "must be 0 or 1, got " << c.zeroStage;
  if (c.zeroStage == 1 && c.dataParallel < 2)
    return bad("zero") << "1 splits the AdamW state over the data-parallel "
                          "ranks and needs data-parallel > 1, got "
                       << c.dataParallel;
  if (c.batchSize % c.dataParallel != 0)
    return bad("data-parallel") << "(" << c.dataParallel
                                << ") must divide batch-size (" << c.batchSize
                                << ")";
  if (c.dataParallel == 1 && c.batchSize % c.microBatches != 0)
    return bad("micro-batches") << "(" << c.microBatches
                                << ") must divide batch-size (" << c.batchSize
                                << ")";
  if (c.rankBatchSize() % c.microBatches != 0)
    return bad("micro-batches")
           << "(" << c.microBatches
           << ") must divide the rows of one rank, batch-size / data-parallel "
              "= "
           << c.batchSize << " / " << c.dataParallel << " = "
           << c.rankBatchSize();
  auto finiteAtLeast0 = [&](StringRef option, double value) -> LogicalResult {
    if (!std::isfinite(value) || value < 0)
      return bad(option) << "must be finite and >= 0, got " << value;
    return success();
  };
  if (failed(finiteAtLeast0("lr", c.lr)) ||
      failed(finiteAtLeast0("weight-decay", c.weightDecay)) ||
      failed(finiteAtLeast0("min-lr", c.minLr)))
    return failure();
  for (auto [option, beta] : {std::pair<StringRef, double>{"beta1", c.beta1},
                              {"beta2", c.beta2}})
    if (!(beta >= 0 && beta < 1))
      return bad(option) << "must be in [0, 1), got " << beta;
  if (!std::isfinite(c.eps) || c.eps <= 0)
    return bad("eps") << "must be finite and > 0, got " << c.eps;
  if (c.gradClipNorm && (!std::isfinite(*c.gradClipNorm) || *c.gradClipNorm <= 0))
    return bad("grad-clip-norm") << "must be finite and > 0 (0 disables "
                                    "clipping), got "
                                 << *c.gradClipNorm;
  if (c.warmupSteps < 0)
    return bad("warmup-steps") << "must be >= 0, got " << c.warmupSteps;
  if (c.schedule == LrSchedule::Cosine) {
    if (c.decaySteps <= 0)
      return bad("decay-steps") << "must be > 0 for the cosine schedule, got "
                                << c.decaySteps;
    if (c.minLr > c.lr)
      return bad("min-lr") << "(" << c.minLr << ") must not exceed lr ("
                           << c.lr << ")";
  }
  return success();
}

namespace {
/// Builds named f32 scalar arithmetic for the optimizer.
class StepBuilder {
public:
  StepBuilder(OpBuilder &b, Location base, Type master)
      : b(b), base(base), master(master) {}

  Location loc(const Twine &name) {
    return NameLoc::get(StringAttr::get(base.getContext(), name), base);
  }
  Value constant(double value, const Twine &name = "") {
    auto type = RankedTensorType::get({}, master);
    auto attr = DenseElementsAttr::get(type, b.getFloatAttr(master, value));
    return ConstantOp::create(b, name.isTriviallyEmpty() ? base : loc(name), attr);
  }
  template <typename OpT, typename... Args>
  Value make(const Twine &name, Args &&...args) {
    return OpT::create(b, loc(name), std::forward<Args>(args)...)->getResult(0);
  }
  /// The sum of all elements of `v` as a scalar.
  Value sumAll(const Twine &name, Value v) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return make<ReduceSumOp>(name, v, axes, /*keep_dims=*/false);
  }
  /// `v` flattened and padded with zeros to `size` elements.
  Value flattenPadded(const Twine &name, Value v, int64_t size) {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t n = type.getNumElements();
    Value flat = type.getRank() == 1
                     ? v
                     : make<ReshapeOp>(name + "_flat", type.clone({n}), v);
    if (size == n)
      return flat;
    return make<PadOp>(name + "_padded", flat, ArrayRef<int64_t>{0},
                       ArrayRef<int64_t>{size - n});
  }
  /// The first elements of the flat `v` as a tensor of `type`.
  Value unflatten(const Twine &name, Value v, RankedTensorType type) {
    int64_t n = type.getNumElements();
    bool reshaped = type.getRank() != 1;
    if (cast<RankedTensorType>(v.getType()).getNumElements() != n)
      v = make<SliceOp>(reshaped ? name + "_unpadded" : name, v,
                        ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n});
    return reshaped ? make<ReshapeOp>(name, type, v) : v;
  }
  Value castTo(const Twine &name, Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return v;
    return make<CastOp>(name, type.clone(element), v);
  }

  OpBuilder &b;
  Location base;
  /// The element type of parameters, optimizer state and scalars.
  Type master;
};

struct Param {
  StringAttr hfName;
  DictionaryAttr attrs;
  RankedTensorType type; // in the master element type
  std::string shortName;
  /// ZeRO-1: the elements of the rank's chunk of the flattened parameter
  /// (and of its moments); 0 without ZeRO.
  int64_t chunk = 0;

  /// The type of the AdamW moments: the parameter's, or its chunk's.
  RankedTensorType momentType() const {
    return chunk ? RankedTensorType::get({chunk}, type.getElementType()) : type;
  }
};
} // namespace

/// lr(s) for 0-based step s: linear warm-up to `lr`, then cosine to `minLr`
/// over `decaySteps`. Written as min(warm-up ramp, cosine) so no select is
/// needed: during warm-up the cosine is still at `lr`, after it the ramp is.
static Value buildLearningRate(StepBuilder &s, const TrainStepOptions &c,
                               Value step) {
  if (c.schedule == LrSchedule::Constant)
    return s.constant(c.lr, "lr");
  Value one = s.constant(1.0);
  Value ramp = s.constant(c.lr);
  if (c.warmupSteps > 0) {
    Value warm = s.make<DivOp>("lr_warmup_frac",
                               s.make<AddOp>("lr_step1", step, one),
                               s.constant(double(c.warmupSteps)));
    ramp = s.make<MulOp>("lr_warmup", s.constant(c.lr),
                         s.make<MinOp>("lr_warmup_clamped", warm, one));
  }
  Value progress = s.make<DivOp>(
      "lr_progress", s.make<SubOp>("lr_decay_step", step,
                                   s.constant(double(c.warmupSteps))),
      s.constant(double(c.decaySteps)));
  progress = s.make<MinOp>("lr_progress_clamped",
                           s.make<MaxOp>("lr_progress_pos", progress, s.constant(0.0)),
                           one);
  Value cosine = s.make<CosOp>("lr_cos",
                               s.make<MulOp>("lr_angle", progress, s.constant(M_PI)));
  Value decayed = s.make<AddOp>(
      "lr_cosine", s.constant(c.minLr),
      s.make<MulOp>("lr_cosine_scaled", s.constant(0.5 * (c.lr - c.minLr)),
                    s.make<AddOp>("lr_cos1", cosine, one)));
  return s.make<MinOp>("lr", ramp, decayed);
}

FailureOr<ForwardSignature>
mlir::tg::readForwardSignature(func::FuncOp forward) {
  ForwardSignature signature;
  FunctionType type = forward.getFunctionType();
  int64_t tokens = -1, targets = -1;
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    if (auto input = forward.getArgAttrOfType<StringAttr>(i, kInputAttr)) {
      if (input.getValue() == "tokens")
        tokens = i;
      else if (input.getValue() == "targets")
        targets = i;
      else
        signature.sharedInputs.push_back({i, input});
      continue;
    }
    if (!forward.getArgAttrOfType<StringAttr>(i, kParamAttr))
      return forward.emitOpError() << "argument #" << i
                                   << " is neither a parameter nor an input";
    signature.params.push_back(i);
  }
  signature.loss = forward.getNumResults()
                       ? dyn_cast<RankedTensorType>(forward.getResultTypes()[0])
                       : RankedTensorType();
  if (tokens < 0 || targets < 0 || !signature.loss ||
      signature.loss.getRank() != 0 ||
      !(signature.loss.getElementType().isF32() ||
        signature.loss.getElementType().isF64()))
    return forward.emitOpError()
           << "must take tg.input \"tokens\" and \"targets\" and return the "
              "f32 or f64 scalar loss first";
  signature.tokens = tokens;
  signature.targets = targets;
  return signature;
}

LogicalResult mlir::tg::checkForwardBatch(func::FuncOp forward,
                                          const ForwardSignature &signature,
                                          const TrainStepOptions &c) {
  auto tokens =
      cast<RankedTensorType>(forward.getArgumentTypes()[signature.tokens]);
  if (tokens.getRank() == 2 && tokens.getShape()[0] == c.microBatchSize() &&
      tokens.getShape()[1] == c.seqLen)
    return success();
  InFlightDiagnostic diag = forward.emitOpError() << "tokens are ";
  llvm::interleave(tokens.getShape(), diag, "x");
  return diag << ", expected (batch_size / (data_parallel x micro_batches)) "
                 "x seq_len = "
              << c.microBatchSize() << "x" << c.seqLen;
}

LogicalResult mlir::tg::declareDataParallelMesh(func::FuncOp forward,
                                                int64_t dataParallel) {
  // A module that declares a mesh must agree, one that does not gets it.
  if (std::optional<Mesh> mesh = getMesh(forward)) {
    int64_t dataSize = mesh->getAxisSize(kDataAxis).value_or(1);
    if (dataSize != dataParallel)
      return forward.emitError()
             << "option 'data-parallel' (" << dataParallel
             << ") differs from the size of the mesh axis \"" << kDataAxis
             << "\" declared by the module (" << dataSize << ", "
             << kMeshAxesAttr << " = " << mesh->axes << ", " << kMeshShapeAttr
             << " = [" << mesh->shape << "]); make them equal";
  } else if (dataParallel > 1) {
    setMesh(forward->getParentOfType<ModuleOp>(), {kDataAxis}, {dataParallel});
  }
  return success();
}

Value mlir::tg::cloneForwardBody(OpBuilder &b, func::FuncOp forward,
                                 IRMapping &map, unsigned result) {
  for (Operation &op : forward.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return map.lookup(ret.getOperand(result));
    b.clone(op, map);
  }
  llvm_unreachable("a function body ends with func.return");
}

LogicalResult mlir::tg::buildTrainStep(func::FuncOp forward,
                                       const TrainStepOptions &c) {
  if (failed(verifyTrainStepOptions(c, [&] { return forward.emitError(); })))
    return failure();
  MLIRContext *ctx = forward.getContext();
  Location base = forward.getLoc();
  OpBuilder b(ctx);

  FailureOr<ForwardSignature> signature = readForwardSignature(forward);
  if (failed(signature))
    return failure();
  FunctionType fwdType = forward.getFunctionType();
  unsigned tokensArg = signature->tokens, targetsArg = signature->targets;
  ArrayRef<std::pair<unsigned, StringAttr>> sharedInputs =
      signature->sharedInputs;
  SmallVector<std::pair<unsigned, Param>> params;
  for (unsigned i : signature->params) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, kParamAttr);
    auto type = cast<RankedTensorType>(fwdType.getInput(i));
    params.push_back({i, Param{name, forward.getArgAttrDict(i), type,
                               shortParamName(name.getValue())}});
  }
  RankedTensorType lossType = signature->loss;
  // Masters, optimizer state and the loss share the loss's precision.
  Type master = lossType.getElementType();
  for (auto &entry : params) {
    Param &p = entry.second;
    p.type = p.type.clone(master);
    // C = ceil(N / D): the D chunks cover the N elements with the fewest
    // zeros of padding.
    if (c.zeroStage == 1)
      p.chunk = (p.type.getNumElements() + c.dataParallel - 1) / c.dataParallel;
  }
  auto microTokens = cast<RankedTensorType>(fwdType.getInput(tokensArg));
  int64_t seq = microTokens.getShape()[1];
  if (failed(checkForwardBatch(forward, *signature, c)) ||
      failed(declareDataParallelMesh(forward, c.dataParallel)))
    return failure();
  // ZeRO-1 picks the rank's chunk by its index along "data": the
  // "mesh_coordinate" input a partitioned forward already has, or a new one.
  bool needsCoordinate =
      c.zeroStage == 1 &&
      llvm::none_of(sharedInputs, [](const auto &input) {
        return input.second.getValue() == kMeshCoordinateInput;
      });
  // One rank's rows of the batch (all of it without data parallelism).
  auto rankTokens = microTokens.clone({c.rankBatchSize(), seq});

  // The signature of train_step.
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  SmallVector<Attribute> argAttrs, resultAttrs;
  auto named = [&](StringRef key, const Twine &value) {
    return b.getDictionaryAttr(b.getNamedAttr(key, b.getStringAttr(value)));
  };
  StepBuilder s(b, base, master);
  for (auto &[_, p] : params) {
    argTypes.push_back(p.type);
    argLocs.push_back(s.loc(p.shortName));
    argAttrs.push_back(p.attrs);
  }
  for (auto [state, kind] : {std::pair<StringRef, StateKind>{"adam_m", StateKind::AdamM},
                             {"adam_v", StateKind::AdamV}})
    for (auto &[_, p] : params) {
      argTypes.push_back(p.momentType());
      argLocs.push_back(s.loc(state + "_" + p.shortName));
      NamedAttrList attrs;
      attrs.set(kStateAttr, StateAttr::get(ctx, kind, p.hfName));
      if (p.chunk)
        attrs.set(kOptimizerShardAttr,
                  OptimizerShardAttr::get(ctx, kDataAxis, p.chunk));
      argAttrs.push_back(attrs.getDictionary(ctx));
    }
  auto scalarI32 = RankedTensorType::get({}, b.getI32Type());
  auto scalarMaster = lossType;
  argTypes.append({scalarI32, rankTokens, rankTokens});
  argLocs.append({s.loc("step"), s.loc("tokens"), s.loc("targets")});
  argAttrs.append({named(kInputAttr, "step"), named(kInputAttr, "tokens"),
                   named(kInputAttr, "targets")});
  for (auto [i, name] : sharedInputs) {
    argTypes.push_back(fwdType.getInput(i));
    argLocs.push_back(s.loc(name.getValue()));
    argAttrs.push_back(named(kInputAttr, name.getValue()));
  }
  std::optional<Mesh> mesh = getMesh(forward);
  if (needsCoordinate) {
    argTypes.push_back(RankedTensorType::get(
        {int64_t(mesh->shape.size())}, b.getI64Type()));
    argLocs.push_back(s.loc(kMeshCoordinateInput));
    argAttrs.push_back(named(kInputAttr, kMeshCoordinateInput));
  }
  SmallVector<Type> resultTypes;
  for (StateKind kind : {StateKind::Param, StateKind::AdamM, StateKind::AdamV})
    for (auto &[_, p] : params) {
      resultTypes.push_back(kind == StateKind::Param ? p.type : p.momentType());
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          kUpdatesAttr, StateAttr::get(ctx, kind, p.hfName))));
    }
  for (StringRef scalarName : {"loss", "grad_norm", "lr"}) {
    resultTypes.push_back(scalarMaster);
    resultAttrs.push_back(named(kOutputAttr, scalarName));
  }

  b.setInsertionPoint(forward);
  auto step = func::FuncOp::create(b, base, "train_step",
                                   b.getFunctionType(argTypes, resultTypes));
  step.setAllArgAttrs(argAttrs);
  step.setAllResultAttrs(resultAttrs);
  Block *entry = b.createBlock(&step.getBody(), {}, argTypes, argLocs);
  size_t n = params.size();
  auto paramArg = [&](size_t i) { return entry->getArgument(i); };
  auto mArg = [&](size_t i) { return entry->getArgument(n + i); };
  auto vArg = [&](size_t i) { return entry->getArgument(2 * n + i); };
  Value stepArg = entry->getArgument(3 * n);
  Value tokens = entry->getArgument(3 * n + 1);
  Value targets = entry->getArgument(3 * n + 2);
  // The rank's index along "data" ([1] i64), for ZeRO-1.
  Value dataIndex;
  if (c.zeroStage == 1) {
    Value coordinate;
    for (auto [k, input] : llvm::enumerate(sharedInputs))
      if (input.second.getValue() == kMeshCoordinateInput)
        coordinate = entry->getArgument(3 * n + 3 + k);
    if (!coordinate)
      coordinate = entry->getArguments().back();
    int64_t axis = llvm::find(mesh->axes, b.getStringAttr(kDataAxis)) -
                   mesh->axes.begin();
    dataIndex = s.make<SliceOp>("data_index", coordinate,
                                ArrayRef<int64_t>{axis}, ArrayRef<int64_t>{1});
  }

  // Parameters in the compute precision (bf16 copies of f32 masters).
  SmallVector<Value> computeParams;
  for (auto [i, entryParam] : llvm::enumerate(params)) {
    Type element = cast<RankedTensorType>(fwdType.getInput(entryParam.first))
                       .getElementType();
    computeParams.push_back(
        s.castTo(entryParam.second.shortName + "_compute", paramArg(i), element));
  }

  // Forward and backward of one micro-batch inside tg.micro_batches, which
  // averages the loss and the gradients (cast to the master type inside it)
  // over the micro-batches of the rank's rows.
  Block &fwdBody = forward.getBody().front();
  SmallVector<Type> mbTypes = {scalarMaster};
  SmallVector<Location> mbNames = {s.loc("loss")};
  for (auto &[_, p] : params) {
    mbTypes.push_back(p.type);
    mbNames.push_back(s.loc("grad_" + p.shortName));
  }
  // One NameLoc per result: tg-unroll-micro-batches names the sums after it.
  SmallVector<Value> shared(computeParams);
  for (size_t k = 0; k < sharedInputs.size(); ++k)
    shared.push_back(entry->getArgument(3 * n + 3 + k));
  auto microBatches = MicroBatchesOp::create(
      b, FusedLoc::get(ctx, mbNames), mbTypes, c.microBatches,
      ValueRange{tokens, targets}, shared);
  SmallVector<Type> bodyTypes = {microTokens, microTokens};
  SmallVector<Location> bodyLocs = {fwdBody.getArgument(tokensArg).getLoc(),
                                    fwdBody.getArgument(targetsArg).getLoc()};
  for (Value v : shared) {
    bodyTypes.push_back(v.getType());
    bodyLocs.push_back(v.getLoc());
  }
  Block *body =
      b.createBlock(&microBatches.getBody(), {}, bodyTypes, bodyLocs);
  {
    IRMapping map;
    map.map(fwdBody.getArgument(tokensArg), body->getArgument(0));
    map.map(fwdBody.getArgument(targetsArg), body->getArgument(1));
    SmallVector<Value> wrt;
    for (auto [i, entryParam] : llvm::enumerate(params)) {
      map.map(fwdBody.getArgument(entryParam.first), body->getArgument(2 + i));
      wrt.push_back(body->getArgument(2 + i));
    }
    for (auto [k, input] : llvm::enumerate(sharedInputs))
      map.map(fwdBody.getArgument(input.first),
              body->getArgument(2 + n + k));
    Value mbLoss = cloneForwardBody(b, forward, map, /*result=*/0);
    auto mbGrads = buildGradients(b, mbLoss, wrt);
    if (failed(mbGrads))
      return failure();
    SmallVector<Value> yielded = {mbLoss};
    for (size_t i = 0; i < n; ++i)
      yielded.push_back(s.castTo("grad_" + params[i].second.shortName + "_master",
                                 (*mbGrads)[i], master));
    YieldOp::create(b, base, yielded);
  }
  b.setInsertionPointAfter(microBatches);
  Value loss = microBatches.getResult(0);
  SmallVector<Value> grads(microBatches.getResults().drop_front());

  // Data parallelism: every rank holds the mean over its rows, and all ranks
  // have as many rows, so the mean of the ranks' means is the mean over the
  // whole batch. Averaging before the norm gives every rank the global norm
  // and the single-device update.
  // Under ZeRO-1 each rank keeps only the average of its chunk of each
  // gradient (reduce-scatter: half the traffic of an all-reduce).
  if (c.dataParallel > 1) {
    auto average = [&](const Twine &name, Value v) {
      return s.make<AllReduceOp>(name, v.getType(), v,
                                 CollectiveReduction::avg,
                                 b.getStringAttr(kDataAxis));
    };
    loss = average("loss_avg", loss);
    for (size_t i = 0; i < n; ++i) {
      const Param &p = params[i].second;
      std::string name = "grad_" + p.shortName;
      if (!p.chunk) {
        grads[i] = average(name + "_avg", grads[i]);
        continue;
      }
      Value padded =
          s.flattenPadded(name, grads[i], p.chunk * c.dataParallel);
      grads[i] = s.make<ReduceScatterOp>(
          name + "_shard", p.momentType(), padded, CollectiveReduction::avg,
          b.getStringAttr(kDataAxis));
    }
  }

  // Global gradient norm and clipping (torch.nn.utils.clip_grad_norm_).
  // A rank holds part of a gradient along each axis it is split over: the
  // tensor-parallel share (tg.shard) and the ZeRO-1 chunk (over "data",
  // zero in the padding). The squares are summed per set of such axes,
  // then over those axes' ranks; what a rank holds whole along an axis
  // counts once.
  Value sumSq;
  std::map<SmallVector<StringRef, 2>, Value> partialSumSq; // by split axes
  for (size_t i = 0; i < n; ++i) {
    const Param &p = params[i].second;
    Value sq = s.sumAll("grad_sq_" + p.shortName,
                        s.make<MulOp>("grad_sq", grads[i], grads[i]));
    SmallVector<StringRef, 2> axes;
    if (p.chunk)
      axes.push_back(kDataAxis);
    if (auto shard = p.attrs.getAs<ShardAttr>(kShardAttr))
      axes.push_back(shard.getAxis());
    Value *total = &sumSq;
    if (!axes.empty())
      total = &partialSumSq[axes];
    *total = *total ? s.make<AddOp>("grad_sq_sum", *total, sq) : sq;
  }
  for (auto &[axes, partial] : partialSumSq) {
    Value all = partial;
    for (StringRef axis : axes)
      all = s.make<AllReduceOp>("grad_sq_sum_" + llvm::join(axes, "_"),
                                all.getType(), all,
                                CollectiveReduction::sum,
                                b.getStringAttr(axis));
    sumSq = sumSq ? s.make<AddOp>("grad_sq_sum", sumSq, all) : all;
  }
  Value gradNorm = s.make<SqrtOp>("grad_norm", sumSq);
  if (c.gradClipNorm) {
    Value coef = s.make<DivOp>(
        "clip_coef", s.constant(*c.gradClipNorm),
        s.make<AddOp>("grad_norm_eps", gradNorm, s.constant(1e-6)));
    coef = s.make<MinOp>("clip_coef_clamped", coef, s.constant(1.0));
    for (size_t i = 0; i < n; ++i)
      grads[i] = s.make<MulOp>("grad_clipped_" + params[i].second.shortName,
                               grads[i], coef);
  }

  // AdamW (torch.optim.AdamW, single-tensor path).
  Value stepF = s.make<CastOp>("step_f32", scalarMaster, stepArg);
  Value lr = buildLearningRate(s, c, stepF);
  Value t = s.make<AddOp>("adam_t", stepF, s.constant(1.0));
  Value one = s.constant(1.0);
  Value bc1 = s.make<SubOp>("adam_bias_correction1", one,
                            s.make<PowOp>("adam_beta1_t", s.constant(c.beta1), t));
  Value bc2 = s.make<SubOp>("adam_bias_correction2", one,
                            s.make<PowOp>("adam_beta2_t", s.constant(c.beta2), t));
  Value stepSize = s.make<DivOp>("adam_step_size", lr, bc1);
  Value bc2Sqrt = s.make<SqrtOp>("adam_bias_correction2_sqrt", bc2);
  Value decay = s.make<SubOp>("adam_decay", one,
                              s.make<MulOp>("adam_lr_wd", lr, s.constant(c.weightDecay)));
  SmallVector<Value> newParams, newM, newV;
  for (size_t i = 0; i < n; ++i) {
    const Param &param = params[i].second;
    const std::string &name = param.shortName;
    Value g = grads[i];
    Value p = paramArg(i);
    // ZeRO-1: the rank updates its chunk of the parameter, the one its
    // moments and gradient chunk cover.
    if (param.chunk)
      p = s.make<ShardSliceOp>(
          name + "_shard", param.momentType(),
          s.flattenPadded(name, p, param.chunk * c.dataParallel), dataIndex,
          /*dim=*/0, /*replicas=*/1);
    // Decoupled weight decay on matrices only (not on norms and biases).
    if (param.type.getRank() >= 2 && c.weightDecay != 0)
      p = s.make<MulOp>(name + "_decayed", p, decay);
    Value m = s.make<AddOp>(
        "adam_m_" + name + "_new",
        s.make<MulOp>("adam_m_" + name + "_scaled", mArg(i), s.constant(c.beta1)),
        s.make<MulOp>("adam_m_" + name + "_grad", g, s.constant(1.0 - c.beta1)));
    Value v = s.make<AddOp>(
        "adam_v_" + name + "_new",
        s.make<MulOp>("adam_v_" + name + "_scaled", vArg(i), s.constant(c.beta2)),
        s.make<MulOp>("adam_v_" + name + "_grad",
                      s.make<MulOp>("grad_sq_" + name, g, g),
                      s.constant(1.0 - c.beta2)));
    Value denom = s.make<AddOp>(
        "adam_denom_" + name,
        s.make<DivOp>("adam_v_hat_" + name, s.make<SqrtOp>("adam_v_sqrt_" + name, v),
                      bc2Sqrt),
        s.constant(c.eps));
    Value update = s.make<MulOp>(
        "adam_update_" + name, s.make<DivOp>("adam_ratio_" + name, m, denom),
        stepSize);
    if (!param.chunk) {
      newParams.push_back(s.make<SubOp>(name + "_new", p, update));
    } else {
      Value chunk = s.make<SubOp>(name + "_new_shard", p, update);
      Value gathered = s.make<AllGatherOp>(
          name + "_new_gathered",
          RankedTensorType::get({param.chunk * c.dataParallel}, master),
          chunk, b.getStringAttr(kDataAxis));
      newParams.push_back(s.unflatten(name + "_new", gathered, param.type));
    }
    newM.push_back(m);
    newV.push_back(v);
  }
  SmallVector<Value> results(newParams);
  results.append(newM);
  results.append(newV);
  results.append({loss, gradNorm, lr});
  func::ReturnOp::create(b, base, results);
  forward.erase();
  return success();
}
