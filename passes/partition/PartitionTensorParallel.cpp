// tg-partition-tensor-parallel: @forward becomes one rank's program of
// Megatron-style tensor parallelism, optionally with sequence parallelism
// (see Passes.td for the strategy). The walk rebuilds the function op by
// op, knowing for every value whether each rank holds it whole, a split of
// it along one dim, or a partial sum of it.
#include "tg/IR/TgDialect.h"
#include "tg/IR/ValueNames.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGPARTITIONTENSORPARALLEL
#include "tg/Passes/Passes.h.inc"

namespace {

/// How the ranks of the tensor axis hold a value.
struct Sharding {
  enum Kind { Replicated, Split, Partial } kind = Replicated;
  /// Split: the dim, read as `blocks` segments each split over the ranks.
  int64_t dim = 0, blocks = 1;

  static Sharding split(int64_t dim, int64_t blocks = 1) {
    return {Split, dim, blocks};
  }
  static Sharding partial() { return {Partial, 0, 1}; }
  bool operator==(const Sharding &o) const {
    return kind == o.kind && (kind != Split || (dim == o.dim && blocks == o.blocks));
  }
};

/// How a sharding reads in an error message.
std::string describe(Sharding s) {
  if (s.kind == Sharding::Replicated)
    return "whole";
  if (s.kind == Sharding::Partial)
    return "a partial sum";
  return "split along dim " + std::to_string(s.dim);
}

/// A parameter's split: its dim, its blocks and whether it is a vocabulary
/// (padded to a multiple of the axis size).
struct ParamSplit {
  int64_t dim, blocks = 1;
  bool vocabulary = false;
};

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The Megatron strategy for the frontend's families, by Hugging Face name.
/// `splitKeyValues` is false where a grouped-query model has fewer key/value
/// heads than ranks.
std::optional<ParamSplit> megatronSplit(StringRef name, bool splitKeyValues) {
  auto endsWith = [&](StringRef suffix) { return name.ends_with(suffix); };
  if (name == "transformer.wte.weight" || name == "model.embed_tokens.weight" ||
      name == "lm_head.weight")
    return ParamSplit{0, 1, true};
  // GPT-2 Conv1D weights are [in, out]: columns split dim 1, rows dim 0.
  if (endsWith(".attn.c_attn.weight"))
    return ParamSplit{1, 3};
  if (endsWith(".attn.c_attn.bias"))
    return ParamSplit{0, 3};
  if (endsWith(".mlp.c_fc.weight"))
    return ParamSplit{1};
  if (endsWith(".mlp.c_fc.bias"))
    return ParamSplit{0};
  if (endsWith(".attn.c_proj.weight") || endsWith(".mlp.c_proj.weight"))
    return ParamSplit{0};
  // nn.Linear weights are [out, in]; the column-parallel layers' biases
  // (Llama's attention_bias / mlp_bias) split like their outputs, the
  // row-parallel ones (o_proj, down_proj) stay whole, added once after the
  // all-reduce, as GPT-2's c_proj biases.
  if (endsWith(".self_attn.q_proj.weight") || endsWith(".mlp.gate_proj.weight") ||
      endsWith(".mlp.up_proj.weight") || endsWith(".self_attn.q_proj.bias") ||
      endsWith(".mlp.gate_proj.bias") || endsWith(".mlp.up_proj.bias"))
    return ParamSplit{0};
  if (endsWith(".self_attn.k_proj.weight") || endsWith(".self_attn.v_proj.weight") ||
      endsWith(".self_attn.k_proj.bias") || endsWith(".self_attn.v_proj.bias"))
    return splitKeyValues ? std::optional<ParamSplit>(ParamSplit{0}) : std::nullopt;
  if (endsWith(".self_attn.o_proj.weight") || endsWith(".mlp.down_proj.weight"))
    return ParamSplit{1};
  return std::nullopt;
}

class Partitioner {
public:
  Partitioner(func::FuncOp forward, int64_t ranks, bool sequenceParallel)
      : forward(forward), ranks(ranks), sequenceParallel(sequenceParallel),
        b(forward.getContext()) {}

  LogicalResult run();

private:
  LogicalResult checkHeads();
  LogicalResult checkSequence();
  LogicalResult rewriteSignature();
  LogicalResult partition(Operation &op);

  // Value states.
  Value get(Value old) const { return mapping.lookup(old); }
  Sharding shardingOf(Value v) const { return shardings.lookup(v); }
  void set(Value old, Value now, Sharding s) {
    mapping.map(old, now);
    shardings[now] = s;
  }
  /// `v` whole on every rank: a partial sum is all-reduced; a split is
  /// rejected (it would need an all-gather, which no strategy here uses).
  FailureOr<Value> whole(Operation *user, Value v);
  /// `v` (replicated) as the input of rank-dependent work: its gradient is
  /// the sum of the ranks' (tg.grad_all_reduce), once per value. A value
  /// whose gradient is already summed that way (`summedGradient`) is
  /// itself.
  Value fanOut(Value v);

  // Sequence parallelism: activations [batch, sequence, ...] outside the
  // tensor-parallel layers are split along the sequence (dim 1).
  /// Whether `v` is such an activation (whole or split along the sequence).
  bool isSequenceActivation(Value v) const {
    auto type = typeOf(v);
    if (!sequenceParallel || type.getRank() != 3)
      return false;
    int64_t share = shardingOf(v) == Sharding::split(1) ? ranks : 1;
    return type.getDimSize(1) * share == sequenceLength;
  }
  /// A partial sum's sequence share: reduce-scattered along the sequence
  /// in place of the all-reduce, once per value.
  Value scatterSequence(Value v);
  /// The whole sequence of a value split along it (dim `dim`), gathered as
  /// the input of rank-dependent work, once per value. The all-gather's VJP
  /// sums the ranks' gradients (a reduce-scatter), so it needs no
  /// tg.grad_all_reduce (`summedGradient`).
  Value gatherSequence(Value v, int64_t dim = 1);
  /// tg.reduce_scatter (sum) or tg.all_gather of `v` along the sequence
  /// (dim `dim`), which moves to the front and back around it.
  Value sequenceCollective(Value v, int64_t dim, bool gather);
  /// The rank's block of `share` elements along `dim` of a replicated
  /// value (its gradient summed over the ranks, unless it is a constant).
  Value shareAlong(Value v, int64_t dim, int64_t share);
  /// The partitioned `old` and its sharding, a partial sum made whole (for
  /// ops that only move elements: slices, reshapes, transposes).
  std::pair<Value, Sharding> notPartial(Operation *user, Value old) {
    Value v = get(old);
    if (shardingOf(v).kind != Sharding::Partial)
      return {v, shardingOf(v)};
    return {*whole(user, v), Sharding()};
  }
  LogicalResult fail(Operation *op, const Twine &why) {
    return op->emitOpError("cannot be partitioned for tensor parallelism: ")
           << why;
  }

  /// `at` (an op or value's location) renamed NAME_suffix.
  Location loc(Location at, StringRef suffix) {
    return derivedLoc(at, locationName(at), "", "_" + suffix);
  }
  Location loc(Operation *op, StringRef suffix) {
    return loc(op->getLoc(), suffix);
  }

  // Op families.
  LogicalResult partitionMatmul(MatmulOp op);
  LogicalResult partitionElementwise(Operation &op);
  LogicalResult partitionSlice(SliceOp op);
  LogicalResult partitionReshape(ReshapeOp op);
  LogicalResult partitionAttention(AttentionOp op);
  LogicalResult partitionCrossEntropy(CrossEntropyOp op);
  LogicalResult partitionNorm(Operation &op);
  /// Clones `op` on its partitioned operands, each result typed like the
  /// original with the split dim divided (ops that keep their operand's
  /// layout: norms, rope, casts).
  LogicalResult cloneWith(Operation &op, Sharding s);

  /// The rank's share of a whole constant (blocks of `blockSize` along dim 0).
  Value shareOf(Location at, DenseElementsAttr whole, int64_t blockSize);
  /// The first vocabulary row of the rank's share ([1] i64), built once for
  /// the embedding and the loss.
  Value vocabularyOffset();
  /// Makes every operand of `op` whole (for ops that need them so).
  LogicalResult makeOperandsWhole(Operation *op);

  func::FuncOp forward;
  int64_t ranks;
  bool sequenceParallel;
  /// The tokens' sequence length (dim 1 of activations).
  int64_t sequenceLength = 0;
  OpBuilder b;
  IRMapping mapping;
  llvm::DenseMap<Value, Sharding> shardings;
  llvm::DenseMap<Value, Value> fannedOut;
  /// Replicated values whose gradient is each rank's share, summed over
  /// the ranks by the VJP of the collective that made them whole (gathered
  /// sequences, and what rotates them): they only feed rank-dependent work.
  llvm::DenseSet<Value> summedGradient;
  bool splitKeyValues = true;
  int64_t keyValueReplicas = 1;
  /// Vocabulary size before padding (0 until a vocabulary is split).
  int64_t vocabulary = 0, paddedVocabulary = 0;
  /// The rank's [1] index along the tensor axis.
  Value tensorIndex;
  Value vocabOffset;
  /// The all-reduced value of each partial sum made whole.
  llvm::DenseMap<Value, Value> summed;
  /// Sequence parallelism's reduce-scattered and gathered values.
  llvm::DenseMap<Value, Value> scattered, gathered;
  func::FuncOp result;
};

LogicalResult Partitioner::checkHeads() {
  WalkResult walk = forward.walk([&](AttentionOp op) {
    int64_t heads = typeOf(op.getQuery()).getDimSize(1);
    int64_t kvHeads = typeOf(op.getKey()).getDimSize(1);
    if (heads % ranks != 0) {
      op.emitOpError() << "has " << heads
                       << " attention heads (num_attention_heads), which the "
                          "mesh axis tp ("
                       << ranks << " ranks) does not divide; choose tp among "
                       << "the divisors of " << heads;
      return WalkResult::interrupt();
    }
    if (kvHeads % ranks == 0)
      return WalkResult::advance();
    if (ranks % kvHeads != 0) {
      op.emitOpError() << "has " << kvHeads
                       << " key/value heads (num_key_value_heads), and the "
                          "mesh axis tp ("
                       << ranks
                       << " ranks) is neither a divisor nor a multiple of it";
      return WalkResult::interrupt();
    }
    splitKeyValues = false;
    keyValueReplicas = ranks / kvHeads;
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult Partitioner::checkSequence() {
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto input = forward.getArgAttrOfType<StringAttr>(i, kInputAttr);
    if (input && input.getValue() == "tokens" &&
        typeOf(forward.getArgument(i)).getRank() == 2)
      sequenceLength = typeOf(forward.getArgument(i)).getDimSize(1);
  }
  if (!sequenceParallel || (sequenceLength && sequenceLength % ranks == 0))
    return success();
  if (!sequenceLength)
    return forward.emitOpError()
           << "cannot be partitioned for sequence parallelism: it has no "
              "[batch, sequence] tg.input \"tokens\" to split";
  return forward.emitOpError()
         << "cannot be partitioned for sequence parallelism: the sequence "
            "(seq_len "
         << sequenceLength << ", dim 1 of tg.input \"tokens\") is not "
         << "divisible by the mesh axis tp (\"tensor\") of " << ranks
         << " ranks; make seq_len a multiple of " << ranks;
}

LogicalResult Partitioner::rewriteSignature() {
  MLIRContext *ctx = forward.getContext();
  FunctionType type = forward.getFunctionType();
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Sharding> argShardings;
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto argType = cast<RankedTensorType>(type.getInput(i));
    NamedAttrList attrs(forward.getArgAttrDict(i));
    Sharding sharding;
    auto name = forward.getArgAttrOfType<StringAttr>(i, kParamAttr);
    std::optional<ParamSplit> split =
        name ? megatronSplit(name.getValue(), splitKeyValues) : std::nullopt;
    if (split) {
      SmallVector<int64_t> shape(argType.getShape());
      int64_t size = shape[split->dim], padded = size;
      if (split->vocabulary) {
        padded = (size + ranks - 1) / ranks * ranks;
        if (vocabulary && vocabulary != size)
          return forward.emitOpError()
                 << "splits two vocabularies of different sizes (" << vocabulary
                 << " and " << size << ")";
        vocabulary = size;
        paddedVocabulary = padded;
      } else if (size % (split->blocks * ranks) != 0) {
        return forward.emitOpError()
               << "parameter '" << name.getValue() << "' has " << size
               << " features along dim " << split->dim
               << ", which the mesh axis tp (" << ranks << " ranks"
               << (split->blocks > 1 ? " x " + std::to_string(split->blocks) +
                                           " blocks"
                                     : std::string())
               << ") does not divide";
      }
      attrs.set(kShardAttr,
                ShardAttr::get(ctx, kTensorAxis, split->dim,
                               b.getDenseI64ArrayAttr(argType.getShape()),
                               padded, split->blocks));
      shape[split->dim] = padded / ranks;
      argType = argType.clone(shape);
      sharding = Sharding::split(split->dim, split->blocks);
    }
    argTypes.push_back(argType);
    argAttrs.push_back(attrs.getDictionary(ctx));
    argShardings.push_back(sharding);
  }
  // The rank's coordinate on the mesh ["data", "tensor"].
  argTypes.push_back(RankedTensorType::get({2}, b.getI64Type()));
  argAttrs.push_back(b.getDictionaryAttr(
      b.getNamedAttr(kInputAttr, b.getStringAttr(kMeshCoordinateInput))));

  b.setInsertionPoint(forward);
  result = func::FuncOp::create(b, forward.getLoc(), forward.getName(),
                                b.getFunctionType(argTypes, {}));
  result.setAllArgAttrs(argAttrs);
  SmallVector<Location> argLocs;
  for (BlockArgument arg : forward.getArguments())
    argLocs.push_back(arg.getLoc());
  argLocs.push_back(NameLoc::get(b.getStringAttr(kMeshCoordinateInput),
                                 forward.getLoc()));
  Block *entry = b.createBlock(&result.getBody(), {}, argTypes, argLocs);
  for (auto [i, arg] : llvm::enumerate(forward.getArguments()))
    set(arg, entry->getArgument(i), argShardings[i]);
  Value coordinate = entry->getArguments().back();
  tensorIndex = SliceOp::create(
      b, NameLoc::get(b.getStringAttr("tensor_index"), forward.getLoc()),
      coordinate, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
  return success();
}

FailureOr<Value> Partitioner::whole(Operation *user, Value v) {
  Sharding s = shardingOf(v);
  if (s.kind == Sharding::Replicated)
    return v;
  if (s.kind == Sharding::Split) {
    (void)fail(user, "an operand is split along dim " + std::to_string(s.dim) +
                         " but the op needs it whole");
    return failure();
  }
  Value &sum = summed[v];
  if (!sum) {
    sum = AllReduceOp::create(b, loc(v.getLoc(), "tp_sum"), v.getType(), v,
                              CollectiveReduction::sum,
                              b.getStringAttr(kTensorAxis));
    shardings[sum] = Sharding();
  }
  return sum;
}

Value Partitioner::fanOut(Value v) {
  if (!isa<FloatType>(typeOf(v).getElementType()) ||
      v.getDefiningOp<ConstantOp>() || summedGradient.contains(v))
    return v;
  auto [it, inserted] = fannedOut.try_emplace(v, Value());
  if (inserted) {
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointAfter(tensorIndex.getDefiningOp());
    it->second = GradAllReduceOp::create(b, loc(v.getLoc(), "tp_in"), v,
                                         b.getStringAttr(kTensorAxis));
  }
  return it->second;
}

Value Partitioner::sequenceCollective(Value v, int64_t dim, bool gather) {
  auto type = typeOf(v);
  int64_t rank = type.getRank();
  // The sequence first: a reshape when only 1s precede it, else a
  // transpose.
  SmallVector<int64_t> perm = {dim};
  for (int64_t i = 0; i < rank; ++i)
    if (i != dim)
      perm.push_back(i);
  bool oneRow = llvm::all_of(type.getShape().take_front(dim),
                             [](int64_t d) { return d == 1; });
  auto permuted = [&](RankedTensorType t) {
    SmallVector<int64_t> shape;
    for (int64_t i : perm)
      shape.push_back(t.getDimSize(i));
    return t.clone(shape);
  };
  auto move = [&](Value x, RankedTensorType to, ArrayRef<int64_t> order,
                  StringRef what) -> Value {
    Location at = loc(v.getLoc(), what);
    if (oneRow)
      return ReshapeOp::create(b, at, to, x);
    return TransposeOp::create(b, at, x, order);
  };
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = gather ? shape[dim] * ranks : shape[dim] / ranks;
  auto resultType = type.clone(shape);
  Value front = move(v, permuted(type), perm, "sp_front");
  auto axis = b.getStringAttr(kTensorAxis);
  auto frontResult = permuted(resultType);
  Value r = gather ? Value(AllGatherOp::create(b, loc(v.getLoc(), "sp_gather"),
                                               frontResult, front, axis))
                   : Value(ReduceScatterOp::create(
                         b, loc(v.getLoc(), "sp_scatter"), frontResult, front,
                         CollectiveReduction::sum, axis));
  SmallVector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  return move(r, resultType, inverse, "sp_back");
}

Value Partitioner::scatterSequence(Value v) {
  Value &share = scattered[v];
  if (!share) {
    share = sequenceCollective(v, /*dim=*/1, /*gather=*/false);
    shardings[share] = Sharding::split(1);
  }
  return share;
}

Value Partitioner::gatherSequence(Value v, int64_t dim) {
  Value &whole = gathered[v];
  if (!whole) {
    whole = sequenceCollective(v, dim, /*gather=*/true);
    shardings[whole] = Sharding();
    summedGradient.insert(whole);
  }
  return whole;
}

Value Partitioner::shareAlong(Value v, int64_t dim, int64_t share) {
  auto type = typeOf(v);
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = share;
  return ShardSliceOp::create(b, loc(v.getLoc(), "tp_share"), type.clone(shape),
                              fanOut(v), tensorIndex, dim, /*replicas=*/1);
}

Value Partitioner::shareOf(Location at, DenseElementsAttr value,
                           int64_t blockSize) {
  return shareAlong(ConstantOp::create(b, at, value), /*dim=*/0, blockSize);
}

Value Partitioner::vocabularyOffset() {
  if (!vocabOffset) {
    SmallVector<int64_t> offsets;
    for (int64_t r = 0; r < ranks; ++r)
      offsets.push_back(r * paddedVocabulary / ranks);
    vocabOffset = shareOf(
        NameLoc::get(b.getStringAttr("vocab_offset"), forward.getLoc()),
        DenseElementsAttr::get(RankedTensorType::get({ranks}, b.getI64Type()),
                               ArrayRef<int64_t>(offsets)),
        1);
  }
  return vocabOffset;
}

LogicalResult Partitioner::makeOperandsWhole(Operation *op) {
  for (Value operand : op->getOperands()) {
    FailureOr<Value> v = whole(op, get(operand));
    if (failed(v))
      return failure();
    mapping.map(operand, *v);
  }
  return success();
}

LogicalResult Partitioner::cloneWith(Operation &op, Sharding s) {
  Operation *copy = b.clone(op, mapping);
  // A split result keeps its split operand's share (a padded vocabulary's
  // share is not the whole size / ranks).
  for (Value r : copy->getResults()) {
    if (s.kind == Sharding::Split) {
      SmallVector<int64_t> shape(typeOf(r).getShape());
      shape[s.dim] = typeOf(copy->getOperand(0)).getDimSize(s.dim);
      r.setType(typeOf(r).clone(shape));
    }
  }
  for (auto [old, now] : llvm::zip(op.getResults(), copy->getResults()))
    set(old, now, s);
  return success();
}

LogicalResult Partitioner::partitionMatmul(MatmulOp op) {
  Value lhs = get(op.getLhs()), rhs = get(op.getRhs());
  Sharding sl = shardingOf(lhs), sr = shardingOf(rhs);
  bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
  int64_t lhsRank = typeOf(lhs).getRank(), rhsRank = typeOf(rhs).getRank();
  int64_t lhsK = tl ? lhsRank - 2 : lhsRank - 1;
  int64_t rhsK = tr ? rhsRank - 1 : rhsRank - 2;
  int64_t rhsN = tr ? rhsRank - 2 : rhsRank - 1;
  auto make = [&](Value l, Value r, Sharding s) {
    Value out = MatmulOp::create(b, op.getLoc(), l, r, tl, tr);
    set(op.getResult(), out, s);
    return success();
  };
  if (sl.kind == Sharding::Partial)
    sl = Sharding(), lhs = *whole(op, lhs);
  if (sr.kind == Sharding::Partial)
    sr = Sharding(), rhs = *whole(op, rhs);
  int64_t outRank = typeOf(op.getResult()).getRank();
  if (sl.kind == Sharding::Replicated && sr.kind == Sharding::Replicated)
    return make(lhs, rhs, Sharding());
  bool columnParallel = sr.kind == Sharding::Split && sr.dim == rhsN;
  // Sequence parallelism: the column-parallel layer reads the whole
  // sequence, gathered.
  if (columnParallel && sl == Sharding::split(1) && isSequenceActivation(lhs))
    return make(gatherSequence(lhs), rhs,
                Sharding::split(outRank - 1, sr.blocks));
  // Column-parallel: the weight's output features are split.
  if (sl.kind == Sharding::Replicated && columnParallel)
    return make(fanOut(lhs), rhs, Sharding::split(outRank - 1, sr.blocks));
  // Rows split along a dim other than the contraction by a whole weight:
  // each rank multiplies its rows.
  if (sl.kind == Sharding::Split && sl.dim != lhsK && sl.blocks == 1 && !tl &&
      sr.kind == Sharding::Replicated && rhsRank == 2)
    return make(lhs, fanOut(rhs), sl);
  // Row-parallel: both contraction dims split; each rank has a partial sum.
  if (sl.kind == Sharding::Split && sr.kind == Sharding::Split &&
      sl.dim == lhsK && sr.dim == rhsK && sl.blocks == 1 && sr.blocks == 1)
    return make(lhs, rhs, Sharding::partial());
  return fail(op, "no Megatron rule for a matmul of a left operand " +
                      describe(sl) + " and a right operand " + describe(sr));
}

LogicalResult Partitioner::partitionElementwise(Operation &op) {
  int64_t rank = typeOf(op.getResult(0)).getRank();
  // A partial sum becomes whole (all-reduced) before an element-wise op
  // (the bias after a row-parallel matmul, a non-linearity); with sequence
  // parallelism a partial activation is reduce-scattered along the
  // sequence instead.
  std::optional<Sharding> split;
  SmallVector<Value> operands;
  for (Value old : op.getOperands()) {
    Value v = get(old);
    Sharding s = shardingOf(v);
    if (s.kind == Sharding::Partial) {
      v = isSequenceActivation(v) ? scatterSequence(v) : *whole(&op, v);
      s = shardingOf(v);
    }
    if (s.kind == Sharding::Split) {
      Sharding aligned = Sharding::split(s.dim + rank - typeOf(v).getRank(),
                                         s.blocks);
      if (split && !(*split == aligned))
        return fail(&op, "its operands are split along different dims");
      split = aligned;
    }
    operands.push_back(v);
  }
  if (!split) {
    IRMapping local;
    for (auto [old, v] : llvm::zip(op.getOperands(), operands))
      local.map(old, v);
    Operation *copy = b.clone(op, local);
    for (auto [old, now] : llvm::zip(op.getResults(), copy->getResults()))
      set(old, now, Sharding());
    return success();
  }
  int64_t share = 0;
  for (Value v : operands)
    if (shardingOf(v).kind == Sharding::Split)
      share = typeOf(v).getDimSize(shardingOf(v).dim);
  // Replicated operands broadcast along the split dim, or each rank takes
  // its share of them (GPT-2's position embeddings under sequence
  // parallelism).
  for (Value &v : operands) {
    if (shardingOf(v).kind == Sharding::Split)
      continue;
    int64_t at = split->dim - (rank - typeOf(v).getRank());
    if (at < 0 || typeOf(v).getDimSize(at) == 1) {
      v = fanOut(v);
      continue;
    }
    if (split->blocks != 1 || typeOf(v).getDimSize(at) != share * ranks)
      return fail(&op, "a replicated operand of " +
                           std::to_string(typeOf(v).getDimSize(at)) +
                           " elements along the split dim is neither "
                           "broadcast nor " +
                           std::to_string(ranks) + " shares of " +
                           std::to_string(share));
    v = shareAlong(v, at, share);
  }
  IRMapping local;
  for (auto [old, v] : llvm::zip(op.getOperands(), operands))
    local.map(old, v);
  Operation *copy = b.clone(op, local);
  SmallVector<int64_t> shape(typeOf(op.getResult(0)).getShape());
  shape[split->dim] = share;
  copy->getResult(0).setType(typeOf(op.getResult(0)).clone(shape));
  set(op.getResult(0), copy->getResult(0), *split);
  return success();
}

LogicalResult Partitioner::partitionSlice(SliceOp op) {
  auto [in, s] = notPartial(op, op.getInput());
  SmallVector<int64_t> offsets(op.getOffsets()), sizes(op.getSizes());
  if (s.kind == Sharding::Replicated) {
    set(op.getResult(), SliceOp::create(b, op.getLoc(), in, offsets, sizes),
        s);
    return success();
  }
  int64_t full = typeOf(op.getInput()).getDimSize(s.dim);
  int64_t block = full / s.blocks, local = block / ranks;
  int64_t offset = offsets[s.dim], size = sizes[s.dim];
  if (offset == 0 && size == full) {
    sizes[s.dim] = typeOf(in).getDimSize(s.dim);
  } else if (offset % block == 0 && size == block) {
    // One block of a fused projection (GPT-2's q, k or v of c_attn).
    offsets[s.dim] = offset / block * local;
    sizes[s.dim] = local;
    s.blocks = 1;
  } else {
    return fail(op, "it cuts the split dim " + std::to_string(s.dim) +
                        " inside a rank's share");
  }
  set(op.getResult(), SliceOp::create(b, op.getLoc(), in, offsets, sizes), s);
  return success();
}

LogicalResult Partitioner::partitionReshape(ReshapeOp op) {
  auto [in, s] = notPartial(op, op.getInput());
  auto outType = typeOf(op.getResult());
  if (s.kind == Sharding::Replicated) {
    set(op.getResult(), ReshapeOp::create(b, op.getLoc(), outType, in), s);
    return success();
  }
  // The split moves to the result dim that starts at the same flat offset
  // (the dims before it hold as many elements), when the ranks divide it:
  // then each rank's share is the same contiguous range in both shapes.
  ArrayRef<int64_t> from = typeOf(op.getInput()).getShape();
  ArrayRef<int64_t> to = outType.getShape();
  int64_t before = 1;
  for (int64_t i = 0; i < s.dim; ++i)
    before *= from[i];
  int64_t prefix = 1;
  for (int64_t j = 0; j < (int64_t)to.size(); ++j) {
    if (prefix == before && to[j] % ranks == 0 && s.blocks == 1) {
      SmallVector<int64_t> shape(to);
      shape[j] /= ranks;
      set(op.getResult(),
          ReshapeOp::create(b, op.getLoc(), outType.clone(shape), in),
          Sharding::split(j));
      return success();
    }
    prefix *= to[j];
  }
  return fail(op, "the reshape does not keep the split dim " +
                      std::to_string(s.dim) + " in one piece");
}

LogicalResult Partitioner::partitionAttention(AttentionOp op) {
  Value q = get(op.getQuery()), k = get(op.getKey()), v = get(op.getValue());
  auto heads = [&](Value x) {
    Sharding s = shardingOf(x);
    return s.kind == Sharding::Split && s.dim == 1;
  };
  if (!heads(q))
    return cloneWith(*op, Sharding());
  // Grouped-query heads shared by several ranks: each takes its own.
  auto ownHead = [&](Value x) -> Value {
    if (heads(x))
      return x;
    // Sequence parallelism with a whole k_proj/v_proj: each rank projected
    // its share of the sequence.
    if (shardingOf(x) == Sharding::split(2))
      x = gatherSequence(x, 2);
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape[1] = shape[1] * keyValueReplicas / ranks;
    return ShardSliceOp::create(b, x.getLoc(), typeOf(x).clone(shape), fanOut(x),
                                tensorIndex, /*dim=*/1, keyValueReplicas);
  };
  auto usable = [&](Value x) {
    return heads(x) || shardingOf(x).kind == Sharding::Replicated ||
           shardingOf(x) == Sharding::split(2);
  };
  if (!usable(k) || !usable(v))
    return fail(op, "its keys or values are neither split by head, nor by "
                    "sequence, nor whole");
  Value out = AttentionOp::create(b, op.getLoc(), q, ownHead(k), ownHead(v),
                                  op.getScaleAttr(), op.getCausalAttr(),
                                  op.getWindowAttr());
  set(op.getResult(), out, Sharding::split(1));
  return success();
}

/// The mean cross-entropy of logits split along the vocabulary: per token,
/// logsumexp = max + log(sum exp(logit - max)) with the max and the sum
/// all-reduced, minus the target logit, which only its owner holds.
LogicalResult Partitioner::partitionCrossEntropy(CrossEntropyOp op) {
  Value logits = get(op.getLogits());
  Sharding s = shardingOf(logits);
  int64_t rank = typeOf(logits).getRank();
  if (s.kind != Sharding::Split)
    return cloneWith(*op, Sharding());
  if (s.dim != rank - 1 || !vocabulary)
    return fail(op, "its logits are split, but not along the vocabulary");
  Value targets = get(op.getTargets());
  Type element = typeOf(op.getLoss()).getElementType();
  int64_t share = paddedVocabulary / ranks;
  auto tensorAxis = b.getStringAttr(kTensorAxis);
  auto reduceAll = [&](const char *what, Value x, CollectiveReduction kind) {
    return AllReduceOp::create(b, loc(op.getOperation(), what), x.getType(), x, kind,
                               tensorAxis);
  };
  if (typeOf(logits).getElementType() != element)
    logits = CastOp::create(b, loc(op.getOperation(), "logits_f32"),
                            typeOf(logits).clone(element), logits);
  // Padding columns get -1e30: exp underflows to exactly 0, so they carry
  // no probability and no gradient. (Not -inf: kernels are compiled with
  // fast-math flags that assume finite values.)
  if (paddedVocabulary != vocabulary) {
    SmallVector<Attribute> mask;
    for (int64_t i = 0; i < paddedVocabulary; ++i)
      mask.push_back(b.getFloatAttr(element, i < vocabulary ? 0.0 : -1e30));
    auto maskType = RankedTensorType::get({paddedVocabulary}, element);
    Value localMask = shareOf(loc(op.getOperation(), "vocab_mask"),
                              DenseElementsAttr::get(maskType, mask), share);
    logits = AddOp::create(b, loc(op.getOperation(), "logits_masked"), logits, localMask);
  }
  int64_t last = rank - 1;
  Value max = ReduceMaxOp::create(b, loc(op.getOperation(), "row_max"), logits,
                                  ArrayRef<int64_t>{last}, true);
  max = StopGradientOp::create(
      b, loc(op.getOperation(), "row_max_const"),
      reduceAll("row_max_all", max, CollectiveReduction::max));
  Value shifted = SubOp::create(b, loc(op.getOperation(), "shifted"), logits, max);
  Value sum = ReduceSumOp::create(b, loc(op.getOperation(), "exp_sum"),
                                  ExpOp::create(b, loc(op.getOperation(), "exp"), shifted),
                                  ArrayRef<int64_t>{last}, false);
  sum = reduceAll("exp_sum_all", sum, CollectiveReduction::sum);
  Value target = PickOp::create(b, loc(op.getOperation(), "target_logit"), typeOf(sum),
                                shifted, targets, vocabularyOffset());
  target = reduceAll("target_logit_all", target, CollectiveReduction::sum);
  Value perToken = SubOp::create(b, loc(op.getOperation(), "token_loss"),
                                 LogOp::create(b, loc(op.getOperation(), "log_exp_sum"), sum),
                                 target);
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank - 1; ++i)
    axes.push_back(i);
  Value loss = ReduceMeanOp::create(b, op.getLoc(), perToken, axes, false);
  set(op.getLoss(), loss, Sharding());
  return success();
}

/// A norm of rows split along another dim normalises each rank's rows; its
/// weights' gradients are the sum of the ranks'.
LogicalResult Partitioner::partitionNorm(Operation &op) {
  Value input = get(op.getOperand(0));
  if (shardingOf(input).kind == Sharding::Partial && isSequenceActivation(input))
    input = scatterSequence(input);
  Sharding s = shardingOf(input);
  int64_t rank = typeOf(input).getRank();
  if (s.kind != Sharding::Split || s.dim == rank - 1 || s.blocks != 1) {
    if (failed(makeOperandsWhole(&op)))
      return failure();
    return cloneWith(op, Sharding());
  }
  mapping.map(op.getOperand(0), input);
  for (Value weight : op.getOperands().drop_front()) {
    FailureOr<Value> v = whole(&op, get(weight));
    if (failed(v))
      return failure();
    mapping.map(weight, fanOut(*v));
  }
  return cloneWith(op, s);
}

LogicalResult Partitioner::partition(Operation &op) {
  b.setInsertionPointToEnd(&result.getBody().front());
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<Value> values;
    for (Value v : ret.getOperands())
      values.push_back(get(v));
    func::ReturnOp::create(b, ret.getLoc(), values);
    result.setFunctionType(b.getFunctionType(
        result.getArgumentTypes(), ValueRange(values).getTypes()));
    return success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](MatmulOp o) { return partitionMatmul(o); })
      .Case([&](SliceOp o) { return partitionSlice(o); })
      .Case([&](ReshapeOp o) { return partitionReshape(o); })
      .Case([&](AttentionOp o) { return partitionAttention(o); })
      .Case([&](CrossEntropyOp o) { return partitionCrossEntropy(o); })
      .Case<LayerNormOp, RmsNormOp>(
          [&](Operation *) { return partitionNorm(op); })
      .Case([&](EmbeddingOp o) -> LogicalResult {
        Value table = get(o.getTable());
        if (shardingOf(table).kind == Sharding::Replicated)
          return cloneWith(op, Sharding());
        if (!(shardingOf(table) == Sharding::split(0)))
          return fail(o, "its table is split, but not along the vocabulary");
        Value rows = EmbeddingOp::create(b, o.getLoc(), table,
                                         get(o.getIndices()), vocabularyOffset());
        set(o.getResult(), rows, Sharding::partial());
        return success();
      })
      .Case([&](TransposeOp o) -> LogicalResult {
        auto [in, s] = notPartial(o, o.getInput());
        if (s.kind == Sharding::Split && s.blocks != 1)
          return fail(o, "it permutes a fused split");
        ArrayRef<int64_t> perm = o.getPermutation();
        if (s.kind == Sharding::Split)
          s.dim = llvm::find(perm, s.dim) - perm.begin();
        set(o.getResult(), TransposeOp::create(b, o.getLoc(), in, perm), s);
        return success();
      })
      .Case([&](RopeOp o) -> LogicalResult {
        Value input = get(o.getInput());
        Sharding s = shardingOf(input);
        // A rotation needs each row's position: a sequence split (keys of
        // a whole k_proj under sequence parallelism) is gathered first,
        // and the rotated keys still feed only rank-dependent work.
        if (s == Sharding::split(2)) {
          IRMapping local;
          local.map(o.getInput(), gatherSequence(input, 2));
          Value rotated = b.clone(op, local)->getResult(0);
          set(o.getResult(), rotated, Sharding());
          summedGradient.insert(rotated);
          return success();
        }
        if (s.kind == Sharding::Split && s.dim != 1)
          return fail(o, "it rotates a tensor split along dim " +
                             std::to_string(s.dim) + " (only heads split)");
        if (s.kind == Sharding::Partial)
          return fail(o, "its input is a partial sum");
        return cloneWith(op, s);
      })
      .Default([&](Operation *other) -> LogicalResult {
        // Norms normalise whole rows; other ops need whole operands too.
        if (other->hasTrait<TgOpTrait::Elementwise>())
          return partitionElementwise(op);
        if (failed(makeOperandsWhole(other)))
          return failure();
        return cloneWith(op, Sharding());
      });
}

LogicalResult Partitioner::run() {
  if (failed(checkHeads()) || failed(checkSequence()) ||
      failed(rewriteSignature()))
    return failure();
  for (Operation &op : forward.getBody().front())
    if (failed(partition(op)))
      return failure();
  result.setAllResultAttrs(forward.getAllResultAttrs());
  forward.erase();
  return success();
}

struct PartitionTensorParallelPass
    : impl::TgPartitionTensorParallelBase<PartitionTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError() << "tg-partition-tensor-parallel: no function @"
                         << function;
      return signalPassFailure();
    }
    if (forward.isExternal()) {
      forward.emitError() << "tg-partition-tensor-parallel: @" << function
                          << " has no body to partition";
      return signalPassFailure();
    }
    if (tensorParallel < 1 || dataParallel < 1) {
      module.emitError() << "tg-partition-tensor-parallel: tensor-parallel ("
                         << tensorParallel << ") and data-parallel ("
                         << dataParallel << ") must be >= 1";
      return signalPassFailure();
    }
    if (getMesh(module)) {
      module.emitError() << "tg-partition-tensor-parallel: the module already "
                            "declares a mesh; partition a single-device "
                            "@forward";
      return signalPassFailure();
    }
    setMesh(module, {kDataAxis, kTensorAxis}, {dataParallel, tensorParallel});
    if (failed(Partitioner(forward, tensorParallel, sequenceParallel).run()))
      return signalPassFailure();
  }
};

} // namespace
} // namespace mlir::tg
