// The functions beside the training step that read its parameters without
// updating them: @eval_step (the loss on a batch) and @logits (what
// generation samples from).
#include "tg/IR/TgOps.h"
#include "tg/Passes/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::tg;

namespace {
/// Builds one function from a forward graph: its parameters as arguments in
/// the master precision (the training step's slots), cast to the forward's
/// element type inside.
class ForwardUser {
public:
  ForwardUser(func::FuncOp forward, const ForwardSignature &signature)
      : forward(forward), signature(signature), b(forward.getContext()),
        master(signature.loss.getElementType()) {}

  Location loc(StringRef name) {
    return NameLoc::get(b.getStringAttr(name), forward.getLoc());
  }
  DictionaryAttr named(StringRef key, StringRef value) {
    return b.getDictionaryAttr(b.getNamedAttr(key, b.getStringAttr(value)));
  }

  /// Starts function `name` with the forward's parameters, then `inputs`
  /// (tg.input name and type), then the forward's shared inputs.
  Block *begin(StringRef name,
               ArrayRef<std::pair<StringRef, Type>> inputs,
               ArrayRef<std::pair<StringRef, Type>> outputs) {
    FunctionType type = forward.getFunctionType();
    SmallVector<Type> argTypes;
    SmallVector<Location> argLocs;
    SmallVector<Attribute> argAttrs;
    for (unsigned i : signature.params) {
      argTypes.push_back(
          cast<RankedTensorType>(type.getInput(i)).clone(master));
      argLocs.push_back(loc(shortParamName(
          forward.getArgAttrOfType<StringAttr>(i, kParamAttr).getValue())));
      argAttrs.push_back(forward.getArgAttrDict(i));
    }
    auto addInput = [&](StringRef input, Type t) {
      argTypes.push_back(t);
      argLocs.push_back(loc(input));
      argAttrs.push_back(named(kInputAttr, input));
    };
    for (auto [input, t] : inputs)
      addInput(input, t);
    for (auto [i, input] : signature.sharedInputs)
      addInput(input.getValue(), type.getInput(i));
    SmallVector<Type> resultTypes;
    SmallVector<Attribute> resultAttrs;
    for (auto [output, t] : outputs) {
      resultTypes.push_back(t);
      resultAttrs.push_back(named(kOutputAttr, output));
    }
    b.setInsertionPoint(forward);
    function = func::FuncOp::create(b, forward.getLoc(), name,
                                    b.getFunctionType(argTypes, resultTypes));
    function.setAllArgAttrs(argAttrs);
    function.setAllResultAttrs(resultAttrs);
    return b.createBlock(&function.getBody(), {}, argTypes, argLocs);
  }

  /// The parameter arguments in the forward's element types.
  SmallVector<Value> computeParameters(Block *entry) {
    FunctionType type = forward.getFunctionType();
    SmallVector<Value> params;
    for (auto [k, i] : llvm::enumerate(signature.params)) {
      Value p = entry->getArgument(k);
      auto computeType = cast<RankedTensorType>(type.getInput(i));
      if (p.getType() != computeType)
        p = CastOp::create(b, loc("param_compute"), computeType, p);
      params.push_back(p);
    }
    return params;
  }

  /// The shared-input arguments, which follow `inputs` others.
  SmallVector<Value> sharedInputs(Block *entry, unsigned inputs) {
    SmallVector<Value> shared;
    for (size_t k = 0; k < signature.sharedInputs.size(); ++k)
      shared.push_back(entry->getArgument(signature.params.size() + inputs + k));
    return shared;
  }

  func::FuncOp forward;
  const ForwardSignature &signature;
  OpBuilder b;
  Type master;
  func::FuncOp function;
};
} // namespace

LogicalResult mlir::tg::buildEvalStep(func::FuncOp forward,
                                      const TrainStepOptions &c) {
  if (failed(verifyTrainStepOptions(c, [&] { return forward.emitError(); })))
    return failure();
  FailureOr<ForwardSignature> signature = readForwardSignature(forward);
  if (failed(signature) || failed(checkForwardBatch(forward, *signature, c)) ||
      failed(declareDataParallelMesh(forward, c.dataParallel)))
    return failure();
  ForwardUser u(forward, *signature);
  auto microTokens = cast<RankedTensorType>(
      forward.getArgumentTypes()[signature->tokens]);
  auto rankTokens = microTokens.clone({c.rankBatchSize(), c.seqLen});
  Block *entry = u.begin("eval_step",
                         {{"tokens", rankTokens}, {"targets", rankTokens}},
                         {{"loss", signature->loss}});
  OpBuilder &b = u.b;
  size_t n = signature->params.size();
  Value tokens = entry->getArgument(n), targets = entry->getArgument(n + 1);
  SmallVector<Value> shared = u.computeParameters(entry);
  llvm::append_range(shared, u.sharedInputs(entry, 2));

  // The forward of each micro-batch, losses averaged by tg.micro_batches.
  auto microBatches = MicroBatchesOp::create(
      b, FusedLoc::get(b.getContext(), {u.loc("loss")}),
      TypeRange{signature->loss}, c.microBatches, ValueRange{tokens, targets},
      shared);
  Block &fwdBody = forward.getBody().front();
  SmallVector<Type> bodyTypes = {microTokens, microTokens};
  SmallVector<Location> bodyLocs = {
      fwdBody.getArgument(signature->tokens).getLoc(),
      fwdBody.getArgument(signature->targets).getLoc()};
  for (Value v : shared) {
    bodyTypes.push_back(v.getType());
    bodyLocs.push_back(v.getLoc());
  }
  Block *body = b.createBlock(&microBatches.getBody(), {}, bodyTypes, bodyLocs);
  {
    IRMapping map;
    map.map(fwdBody.getArgument(signature->tokens), body->getArgument(0));
    map.map(fwdBody.getArgument(signature->targets), body->getArgument(1));
    for (auto [k, i] : llvm::enumerate(signature->params))
      map.map(fwdBody.getArgument(i), body->getArgument(2 + k));
    for (auto [k, input] : llvm::enumerate(signature->sharedInputs))
      map.map(fwdBody.getArgument(input.first), body->getArgument(2 + n + k));
    Value loss = cloneForwardBody(b, forward, map, /*result=*/0);
    YieldOp::create(b, forward.getLoc(), ValueRange{loss});
  }
  b.setInsertionPointAfter(microBatches);
  Value loss = microBatches.getResult(0);
  // Every rank's mean over as many rows: their mean is the batch's.
  if (c.dataParallel > 1)
    loss = AllReduceOp::create(b, u.loc("loss_avg"), loss.getType(), loss,
                               CollectiveReduction::avg,
                               b.getStringAttr(kDataAxis));
  func::ReturnOp::create(b, forward.getLoc(), ValueRange{loss});
  return success();
}

LogicalResult mlir::tg::buildLogits(func::FuncOp forward) {
  FailureOr<ForwardSignature> signature = readForwardSignature(forward);
  if (failed(signature))
    return failure();
  std::optional<Mesh> mesh = getMesh(forward);
  int64_t devices = 1;
  if (mesh)
    for (int64_t size : mesh->shape)
      devices *= size;
  if (devices != 1)
    return emitError(forward.getLoc())
           << "@" << forward.getSymName() << " is laid out on the mesh "
           << mesh->axes << " = [" << mesh->shape
           << "]: the logits function is built for one device (a partitioned "
              "forward holds a part of the logits); compile it without a mesh";
  auto logitsType = forward.getNumResults() > 1
                        ? dyn_cast<RankedTensorType>(forward.getResultTypes()[1])
                        : RankedTensorType();
  if (!logitsType || logitsType.getRank() != 3)
    return forward.emitOpError("must return the [batch, seq, vocab] logits "
                               "second to build the logits function");
  ForwardUser u(forward, *signature);
  Type master = signature->loss.getElementType();
  auto tokensType = forward.getArgumentTypes()[signature->tokens];
  Block *entry = u.begin("logits", {{"tokens", tokensType}},
                         {{"logits", logitsType.clone(master)}});
  OpBuilder &b = u.b;
  size_t n = signature->params.size();
  Block &fwdBody = forward.getBody().front();
  Value logits = cast<func::ReturnOp>(fwdBody.getTerminator()).getOperand(1);

  // Only the ops the logits depend on: not the loss, nor the targets.
  llvm::SmallPtrSet<Operation *, 32> needed;
  SmallVector<Operation *> worklist;
  auto need = [&](Value v) {
    if (Operation *def = v.getDefiningOp())
      if (needed.insert(def).second)
        worklist.push_back(def);
  };
  need(logits);
  while (!worklist.empty())
    for (Value operand : worklist.pop_back_val()->getOperands())
      need(operand);
  for (Operation *op : needed)
    if (llvm::is_contained(op->getOperands(),
                           fwdBody.getArgument(signature->targets)))
      return op->emitOpError("computes the logits from the targets; the "
                             "logits function cannot be built");

  IRMapping map;
  map.map(fwdBody.getArgument(signature->tokens), entry->getArgument(n));
  for (auto [k, p] : llvm::enumerate(u.computeParameters(entry)))
    map.map(fwdBody.getArgument(signature->params[k]), p);
  for (auto [k, shared] : llvm::enumerate(u.sharedInputs(entry, 1)))
    map.map(fwdBody.getArgument(signature->sharedInputs[k].first), shared);
  for (Operation &op : fwdBody.without_terminator())
    if (needed.contains(&op))
      b.clone(op, map);
  Value result = map.lookupOrDefault(logits);
  if (result.getType() != logitsType.clone(master))
    result = CastOp::create(b, u.loc("logits_master"), logitsType.clone(master),
                            result);
  func::ReturnOp::create(b, forward.getLoc(), ValueRange{result});
  return success();
}
