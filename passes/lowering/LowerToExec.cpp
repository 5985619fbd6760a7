// tg-lower-to-exec: @train_step (tg ops and dispatch regions on tensors),
// and @eval_step and @logits beside it, become exec.programs of typed
// resources and commands, with one kernel function on tensors per distinct
// dispatch region in the kernel module they share.
#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/FlopCount.h"
#include "tg/Passes/Interface.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"

#include <map>

namespace mlir::tg {
#define GEN_PASS_DEF_TGLOWERTOEXEC
#include "tg/Passes/Passes.h.inc"

namespace {
using exec::ResourceKind;

constexpr llvm::StringLiteral kKernelModuleName = "kernels";

/// The library call computing a tg.matmul on row-major buffers.
exec::GemmOp createGemm(OpBuilder &b, MatmulOp op, Value lhs, Value rhs,
                        Value out) {
  auto lhsType = op.getLhs().getType();
  auto rhsType = op.getRhs().getType();
  auto outType = op.getResult().getType();
  int64_t rank = outType.getRank();
  int64_t m = outType.getDimSize(rank - 2), n = outType.getDimSize(rank - 1);
  int64_t k = lhsType.getDimSize(rank - (op.getTransposeLhs() ? 2 : 1));
  int64_t batch = outType.getNumElements() / std::max<int64_t>(1, m * n);
  int64_t strideB = rhsType.getRank() == 2 ? 0 : k * n;
  // A matrix shared by all batches of an untransposed lhs: one tall GEMM.
  if (strideB == 0 && !op.getTransposeLhs() && batch > 1) {
    m *= batch;
    batch = 1;
  }
  return exec::GemmOp::create(
      b, op.getLoc(), exec::TimepointType::get(b.getContext()), lhs, rhs, out,
      /*bias=*/Value(), /*aux=*/Value(), /*bias_grad=*/Value(),
      /*addend=*/Value(),
      /*awaits=*/ValueRange{}, op.getTransposeLhs(), op.getTransposeRhs(), m, n,
      k, batch, /*stride_a=*/m * k, strideB, /*stride_c=*/m * n,
      /*lda=*/0, /*ldb=*/0, /*ldc=*/0, /*inner_batch=*/1,
      /*inner_stride_a=*/0, /*inner_stride_b=*/0, /*inner_stride_c=*/0,
      exec::GemmActivation::none, /*stream=*/0);
}

/// The [batch, head, row] strides (elements) of a bf16 operand of flash
/// attention, stored [B, H, T, D] or, with `tokens`, [B, T, H, D].
void appendStrides(SmallVectorImpl<int64_t> &strides, Value tensor,
                   bool tokens = false) {
  ArrayRef<int64_t> s = cast<RankedTensorType>(tensor.getType()).getShape();
  if (tokens) // [B, T, H, D]
    strides.append({s[1] * s[2] * s[3], s[3], s[2] * s[3]});
  else
    strides.append({s[1] * s[2] * s[3], s[2] * s[3], s[3]});
}

/// The scale, causal flag, window and rotation of a flash attention op or
/// its gradient.
template <typename FlashOp>
std::tuple<llvm::APFloat, bool, uint64_t, std::optional<RopeFrequencies>>
attentionAttributes(FlashOp op) {
  return {op.getScale(), op.getCausal(), op.getWindow(), op.getRope()};
}

/// The kernel module the programs of a module share, and its kernels by
/// what they compute (regionKey).
struct KernelModule {
  ModuleOp module;
  llvm::StringMap<func::FuncOp> byKey;
};

class ExecBuilder {
public:
  ExecBuilder(func::FuncOp func, uint64_t seed, KernelModule &kernels)
      : func(func), seed(seed), b(func.getContext()), kernels(kernels) {}

  LogicalResult build() {
    if (!func.getBody().hasOneBlock())
      return func.emitOpError("must have a single block to be lowered");
    auto interface = readStepInterface(func);
    if (failed(interface))
      return failure();
    createProgram();
    if (!kernels.module)
      createKernelModule();
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      addArgument(arg, (*interface).args[i]);
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    roles = (*interface).results;
    for (auto [i, role] : llvm::enumerate(roles))
      if (role.updates && !stateOf(role))
        return func.emitOpError("result #")
               << i << " updates " << exec::stringifyResourceKind(role.kind)
               << " '" << role.name << "', which is not an argument";
    claimResults(ret);
    for (Operation &op : func.getBody().front())
      if (!isa<func::ReturnOp>(op) && failed(lower(op)))
        return failure();
    placeUnclaimedResults(ret);
    func.erase();
    return success();
  }

private:
  void createProgram() {
    // The module's mesh, or a single device.
    std::optional<Mesh> mesh = getMesh(func);
    ArrayAttr meshAxes = mesh ? mesh->axes : b.getStrArrayAttr({kDataAxis});
    DenseI64ArrayAttr meshShape = b.getDenseI64ArrayAttr(
        mesh ? mesh->shape : ArrayRef<int64_t>{1});
    // The step's tokens are one rank's rows; every rank along "data" has as
    // many, so the global batch (what the runtime splits) is their product.
    int64_t ranksAlongData =
        mesh ? mesh->getAxisSize(kDataAxis).value_or(1) : 1;
    int64_t batch = 0, seq = 0;
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      if (auto input = func.getArgAttrOfType<StringAttr>(i, kInputAttr);
          input && input.getValue() == "tokens") {
        auto type = cast<RankedTensorType>(arg.getType());
        if (type.getRank() == 2) {
          batch = type.getDimSize(0) * ranksAlongData;
          seq = type.getDimSize(1);
        }
      }
    auto module = func->getParentOfType<ModuleOp>();
    int64_t vocab = 0;
    if (auto attr = module->getAttrOfType<IntegerAttr>(kVocabSizeAttr))
      vocab = attr.getInt();
    b.setInsertionPoint(func);
    program = exec::ProgramOp::create(
        b, func.getLoc(), b.getStringAttr(func.getSymName()), meshAxes,
        meshShape, b.getI64IntegerAttr(batch),
        b.getI64IntegerAttr(seq), b.getI64IntegerAttr(vocab),
        b.getI64IntegerAttr(int64_t(seed)),
        b.getF64FloatAttr(double(modelFlops(func))), IntegerAttr(),
        IntegerAttr());
    if (Attribute plan = func->getAttr(kAttentionPlanAttr))
      program->setAttr(kAttentionPlanAttr, plan);
    b.createBlock(&program.getBody());
  }

  void createKernelModule() {
    b.setInsertionPointAfter(program);
    kernels.module = ModuleOp::create(b, func.getLoc(), kKernelModuleName);
    b.setInsertionPointToEnd(&program.getBlock());
  }

  Value createResource(Location loc, Type tensorType, ResourceKind kind,
                       StringRef name = {}, Value updates = {},
                       Attribute init = {}, ElementsAttr value = {}) {
    return exec::ResourceOp::create(
        b, loc, exec::getBufferType(tensorType), kind,
        name.empty() ? StringAttr() : b.getStringAttr(name), updates, init,
        value, IntegerAttr(), Value(), IntegerAttr());
  }

  void addArgument(BlockArgument arg, const InterfaceRole &role) {
    Value resource = createResource(arg.getLoc(), arg.getType(), role.kind,
                                    role.name, {}, role.init);
    if (role.shard)
      resource.getDefiningOp()->setAttr(kShardAttr, role.shard);
    if (role.optimizerShard)
      resource.getDefiningOp()->setAttr(kOptimizerShardAttr,
                                        role.optimizerShard);
    buffers[arg] = resource;
    stateByRole[{role.kind, role.name}] = resource;
  }

  /// The state resource a result updates.
  Value stateOf(const InterfaceRole &role) const {
    auto it = stateByRole.find({role.kind, role.name});
    return it == stateByRole.end() ? Value() : it->second;
  }

  /// Returned values computed by a command get their output (or new state)
  /// resource when that command runs; the rest are copied at the end.
  void claimResults(func::ReturnOp ret) {
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      Operation *def = value.getDefiningOp();
      bool computed = def && !isa<ConstantOp, ReshapeOp>(def);
      if (computed && !claims.count(value))
        claims[value] = i;
    }
  }

  void placeUnclaimedResults(func::ReturnOp ret) {
    b.setInsertionPointToEnd(&program.getBlock());
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      auto it = claims.find(value);
      if (it != claims.end() && it->second == i)
        continue;
      const InterfaceRole &role = roles[i];
      Value target;
      if (role.updates) {
        target = stateOf(role);
        if (target == buffers[value])
          continue; // returned unchanged
      } else {
        target = createResource(ret.getLoc(), value.getType(), role.kind,
                                role.name);
      }
      exec::CopyOp::create(b, ret.getLoc(),
                           exec::TimepointType::get(b.getContext()),
                           buffers[value], target, ValueRange{}, 0);
    }
  }

  /// The resource a command's result `value` is written to.
  Value resultBuffer(Value value) {
    auto it = claims.find(value);
    if (it == claims.end())
      return createResource(value.getLoc(), value.getType(),
                            ResourceKind::scratch);
    const InterfaceRole &role = roles[it->second];
    if (role.updates)
      return createResource(value.getLoc(), value.getType(),
                            ResourceKind::scratch, {},
                            stateOf(role));
    return createResource(value.getLoc(), value.getType(), role.kind,
                          role.name);
  }

  LogicalResult lower(Operation &op) {
    b.setInsertionPointToEnd(&program.getBlock());
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value)
        return op.emitOpError("needs a dense value to be lowered");
      buffers[constant] =
          createResource(op.getLoc(), constant.getType(),
                         ResourceKind::constant, {}, {}, {}, value);
      return success();
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      buffers[reshape] = exec::ViewOp::create(
          b, op.getLoc(), exec::getBufferType(reshape.getType()),
          buffers[reshape.getInput()]);
      return success();
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      Value out = resultBuffer(matmul);
      buffers[matmul] = out;
      createGemm(b, matmul, buffers[matmul.getLhs()], buffers[matmul.getRhs()],
                 out);
      return success();
    }
    if (isa<FlashAttentionOp, FlashAttentionGradOp>(op))
      return lowerAttention(op);
    if (auto allReduce = dyn_cast<AllReduceOp>(op))
      return lowerAllReduce(allReduce);
    // A reduce-scatter or an all-gather changes the size: a new buffer.
    if (isa<ReduceScatterOp, AllGatherOp>(op)) {
      Value input = buffers[op.getOperand(0)];
      Value target = resultBuffer(op.getResult(0));
      buffers[op.getResult(0)] = target;
      auto timepoint = exec::TimepointType::get(b.getContext());
      if (auto scatter = dyn_cast<ReduceScatterOp>(op))
        exec::ReduceScatterOp::create(b, op.getLoc(), timepoint, input, target,
                                      scatter.getAxis(),
                                      execReduction(scatter.getReduction()),
                                      /*awaits=*/ValueRange{}, /*stream=*/0);
      else
        exec::AllGatherOp::create(b, op.getLoc(), timepoint, input, target,
                                  cast<AllGatherOp>(op).getAxis(),
                                  /*awaits=*/ValueRange{}, /*stream=*/0);
      return success();
    }
    if (auto region = dyn_cast<exec::DispatchRegionOp>(op))
      return lowerRegion(region);
    return op.emitOpError("cannot be lowered to exec")
           << (isa<AttentionOp, AttentionGradOp>(op)
                   ? ": run tg-decompose-attention first"
                   : ": run tg-form-dispatch-regions first, or it has no "
                     "kernel lowering");
  }

  /// Flash attention outside a dispatch region (tg-form-dispatch-regions'
  /// library-attention): the runtime's kernels, an exec.attention.
  LogicalResult lowerAttention(Operation &op) {
    auto grad = dyn_cast<FlashAttentionGradOp>(op);
    Value query = op.getOperand(0), key = op.getOperand(1);
    auto queryType = cast<RankedTensorType>(query.getType());
    ArrayRef<int64_t> q = queryType.getShape();
    ArrayRef<int64_t> k = cast<RankedTensorType>(key.getType()).getShape();
    if (!queryType.getElementType().isBF16() || (q[3] != 64 && q[3] != 128))
      return op.emitOpError("is outside a dispatch region, so it needs the "
                            "runtime's flash kernels, which take bf16 with head "
                            "dim 64 or 128");
    SmallVector<Value> inputs, outputs;
    SmallVector<int64_t> strides;
    for (Value input : op.getOperands())
      inputs.push_back(buffers[input]);
    appendStrides(strides, query);
    appendStrides(strides, key);
    appendStrides(strides, op.getOperand(2));
    if (grad) {
      appendStrides(strides, grad.getResult(), grad.getResultTokens());
      appendStrides(strides, grad.getResultGrad());
      // delta, rowsum(dO * O): f32 per query row, the kernels' scratch.
      outputs.push_back(createResource(
          op.getLoc(), grad.getLogsumexp().getType(), ResourceKind::scratch));
    }
    for (Value result : op.getResults()) {
      Value out = resultBuffer(result);
      buffers[result] = out;
      outputs.push_back(out);
      if (cast<RankedTensorType>(result.getType()).getElementType().isBF16())
        appendStrides(strides, result);
    }
    auto [scale, causal, window, rope] =
        grad ? attentionAttributes(grad)
             : attentionAttributes(cast<FlashAttentionOp>(op));
    bool cudnn = grad ? grad.getCudnn() : cast<FlashAttentionOp>(op).getCudnn();
    DenseF64ArrayAttr frequencies;
    if (rope) {
      SmallVector<double> values;
      for (int64_t i = 0; i < q[3] / 2; ++i)
        values.push_back(rope->frequency(i, q[3]));
      frequencies = b.getDenseF64ArrayAttr(values);
    }
    exec::AttentionOp::create(
        b, op.getLoc(), exec::TimepointType::get(b.getContext()), inputs,
        outputs, /*awaits=*/ValueRange{}, bool(grad), q[0], q[1], k[1], q[2],
        k[2], q[3], scale, causal, window, strides, frequencies, cudnn,
        /*stream=*/0);
    return success();
  }

  static exec::Reduction execReduction(CollectiveReduction reduction) {
    return *exec::symbolizeReduction(stringifyCollectiveReduction(reduction));
  }

  /// Whether `value` is the only value stored in its buffer: the chain of
  /// reshapes (views) that leads to it from the op that wrote the buffer
  /// has no other use.
  static bool ownsItsBuffer(Value value) {
    for (;; value = value.getDefiningOp<ReshapeOp>().getInput()) {
      if (!value.hasOneUse())
        return false;
      if (!value.getDefiningOp<ReshapeOp>())
        return true;
    }
  }

  /// An exec.all_reduce into a new buffer, or in place over its input when
  /// the input is a scratch resource of its own (perhaps reshaped, as a
  /// bias's gradient is) that nothing else reads (a gradient: no second
  /// copy of it lives until the optimizer).
  LogicalResult lowerAllReduce(AllReduceOp op) {
    Value source = buffers[op.getInput()];
    exec::ResourceOp storage = exec::getStorage(source);
    bool inPlace = ownsItsBuffer(op.getInput()) &&
                   !claims.count(op.getResult()) && storage &&
                   storage.getKind() == ResourceKind::scratch &&
                   !storage.getUpdates();
    Value target = inPlace ? source : resultBuffer(op.getResult());
    buffers[op.getResult()] = target;
    exec::AllReduceOp::create(b, op.getLoc(),
                              exec::TimepointType::get(b.getContext()), source,
                              target, op.getAxis(),
                              execReduction(op.getReduction()),
                              /*awaits=*/ValueRange{}, /*stream=*/0);
    return success();
  }

  LogicalResult lowerRegion(exec::DispatchRegionOp region) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(region.getBody(), captured);
    func::FuncOp kernel = outline(region, captured.getArrayRef());
    SmallVector<Value> inputs, outputs;
    for (Value v : captured)
      inputs.push_back(buffers[v]);
    for (Value result : region.getResults()) {
      Value out = resultBuffer(result);
      buffers[result] = out;
      outputs.push_back(out);
    }
    exec::DispatchOp::create(
        b, region.getLoc(), exec::TimepointType::get(b.getContext()),
        SymbolRefAttr::get(kernels.module.getSymNameAttr(),
                           {FlatSymbolRefAttr::get(kernel.getSymNameAttr())}),
        inputs, outputs, ValueRange{}, 0);
    return success();
  }

  /// What `region` computes from `inputs`, independent of names and
  /// locations: each op's name, attributes and types, and where each of its
  /// operands comes from (an input, or a result of an earlier op). Names,
  /// attributes and types are uniqued by the context, so their addresses
  /// stand for them.
  static std::string regionKey(exec::DispatchRegionOp region,
                               ArrayRef<Value> inputs) {
    DenseMap<Value, int64_t> ref; // inputs >= 0, op results < 0
    for (auto [i, v] : llvm::enumerate(inputs))
      ref[v] = i;
    std::string key;
    auto append = [&](const void *p) {
      key.append(reinterpret_cast<const char *>(&p), sizeof p);
    };
    int64_t produced = 0;
    for (Operation &op : region.getBody().front()) {
      append(op.getName().getAsOpaquePointer());
      append(op.getRawDictionaryAttrs().getAsOpaquePointer());
      append(op.getPropertiesAsAttribute().getAsOpaquePointer());
      for (Value v : op.getOperands()) {
        append(reinterpret_cast<const void *>(ref.lookup(v)));
        append(v.getType().getAsOpaquePointer());
      }
      for (Value result : op.getResults()) {
        ref[result] = --produced;
        append(result.getType().getAsOpaquePointer());
      }
    }
    return key;
  }

  /// The kernel computing `region` from `inputs`: an existing one with the
  /// same key, or a new function on tensors cloned from the region.
  func::FuncOp outline(exec::DispatchRegionOp region, ArrayRef<Value> inputs) {
    auto [it, inserted] =
        kernels.byKey.try_emplace(regionKey(region, inputs), func::FuncOp());
    if (!inserted)
      return it->second;
    OpBuilder kb = OpBuilder::atBlockEnd(kernels.module.getBody());
    SmallVector<Type> inputTypes;
    for (Value v : inputs)
      inputTypes.push_back(v.getType());
    Block &body = region.getBody().front();
    // Named after its ops: k3_add, or k7_mul_to_sub for a fused chain
    // (compiled-in constants aside, and the views a flash group reads and
    // writes through: k8_flash_attention).
    std::string name = "k" + std::to_string(kernels.byKey.size() - 1);
    bool flashGroup = isFlashGroup(body);
    SmallVector<Operation *> computing;
    for (Operation &op : body.without_terminator())
      if (!isa<tg::ConstantOp>(op) &&
          (!flashGroup || isa<tg::FlashAttentionOp, tg::FlashAttentionGradOp>(op)))
        computing.push_back(&op);
    if (!computing.empty())
      name += "_" + computing.front()->getName().stripDialect().str();
    if (computing.size() > 1)
      name += "_to_" + computing.back()->getName().stripDialect().str();
    auto kernel = func::FuncOp::create(
        kb, region.getLoc(), name,
        kb.getFunctionType(inputTypes, region.getResultTypes()));
    Block *entry = kernel.addEntryBlock();
    IRMapping map;
    map.map(inputs, entry->getArguments());
    kb.setInsertionPointToEnd(entry);
    for (Operation &op : body.without_terminator())
      kb.clone(op, map);
    SmallVector<Value> results;
    for (Value v : cast<exec::YieldOp>(body.getTerminator()).getValues())
      results.push_back(map.lookup(v));
    func::ReturnOp::create(kb, region.getLoc(), results);
    it->second = kernel;
    return kernel;
  }

  func::FuncOp func;
  uint64_t seed;
  OpBuilder b;
  KernelModule &kernels;
  exec::ProgramOp program;
  DenseMap<Value, Value> buffers; // tensor value -> buffer
  std::map<std::pair<ResourceKind, std::string>, Value> stateByRole;
  DenseMap<Value, unsigned> claims; // returned value -> result index
  SmallVector<InterfaceRole> roles; // of the results
};

struct LowerToExecPass : impl::TgLowerToExecBase<LowerToExecPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    if (functions.empty()) {
      for (StringRef name : {"train_step", "eval_step", "logits"})
        if (auto f = module.lookupSymbol<func::FuncOp>(name))
          steps.push_back(f);
      if (steps.empty() || steps.front().getSymName() != "train_step") {
        module.emitError() << "no function @train_step to lower; set the "
                              "pass option functions=NAME,...";
        return signalPassFailure();
      }
    }
    for (const std::string &name : functions) {
      auto f = module.lookupSymbol<func::FuncOp>(name);
      if (!f) {
        module.emitError() << "no function @" << name
                           << " to lower (pass option functions)";
        return signalPassFailure();
      }
      steps.push_back(f);
    }
    KernelModule kernels;
    for (func::FuncOp step : steps)
      if (failed(ExecBuilder(step, seed, kernels).build()))
        return signalPassFailure();
  }
};
} // namespace
} // namespace mlir::tg
