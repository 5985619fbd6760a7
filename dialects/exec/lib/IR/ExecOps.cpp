// Verifiers and helpers of the execution dialect.
#include "tg/Exec/IR/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg::exec;

#include "tg/Exec/IR/ExecEnums.cpp.inc"

#define GET_OP_CLASSES
#include "tg/Exec/IR/ExecOps.cpp.inc"

namespace mlir::tg::exec {

int64_t getByteSize(MemRefType type) {
  return type.getNumElements() * getElementByteSize(type.getElementType());
}

int64_t getElementByteSize(Type element) {
  return (element.getIntOrFloatBitWidth() + 7) / 8;
}

bool isPackableKind(ResourceKind kind) {
  return kind == ResourceKind::scratch || kind == ResourceKind::parameter ||
         kind == ResourceKind::adam_m || kind == ResourceKind::adam_v ||
         kind == ResourceKind::compute_copy;
}

MemRefType getBufferType(Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  return MemRefType::get(type.getShape(), type.getElementType());
}

bool isKernelOnTensors(FunctionType kernel) {
  return kernel.getNumResults() > 0 ||
         llvm::any_of(kernel.getInputs(), llvm::IsaPred<TensorType>);
}

bool isCommand(Operation *op) {
  return isa<DispatchOp, GemmOp, AttentionOp, CopyOp, AllReduceOp,
             ReduceScatterOp, AllGatherOp, SendOp, RecvOp>(op);
}

OperandRange getAwaits(Operation *command) {
  return llvm::TypeSwitch<Operation *, OperandRange>(command)
      .Case<DispatchOp, GemmOp, AttentionOp, CopyOp, AllReduceOp,
            ReduceScatterOp, AllGatherOp, SendOp, RecvOp>(
          [](auto op) { return op.getAwaits(); });
}

void addAwaits(Operation *command, ValueRange timepoints) {
  SmallVector<Value> missing;
  for (Value t : timepoints)
    if (!llvm::is_contained(getAwaits(command), t) &&
        !llvm::is_contained(missing, t))
      missing.push_back(t);
  if (missing.empty())
    return;
  llvm::TypeSwitch<Operation *>(command)
      .Case<DispatchOp, GemmOp, AttentionOp, CopyOp, AllReduceOp,
            ReduceScatterOp, AllGatherOp, SendOp, RecvOp>(
          [&](auto op) { op.getAwaitsMutable().append(missing); });
}

SmallVector<Value> getReadBuffers(Operation *command) {
  return llvm::TypeSwitch<Operation *, SmallVector<Value>>(command)
      .Case<DispatchOp, AttentionOp>(
          [](auto op) { return SmallVector<Value>(op.getInputs()); })
      .Case([](GemmOp op) {
        SmallVector<Value> read{op.getA(), op.getB()};
        if (op.getBias())
          read.push_back(op.getBias());
        if (op.getActivation() == GemmActivation::gelu_tanh_grad)
          read.push_back(op.getAux());
        if (op.getAddend())
          read.push_back(op.getAddend());
        return read;
      })
      .Case<CopyOp, AllReduceOp, ReduceScatterOp, AllGatherOp, SendOp>(
          [](auto op) { return SmallVector<Value>{op.getSource()}; })
      .Default([](Operation *) { return SmallVector<Value>{}; });
}

SmallVector<Value> getWrittenBuffers(Operation *command) {
  return llvm::TypeSwitch<Operation *, SmallVector<Value>>(command)
      .Case<DispatchOp, AttentionOp>(
          [](auto op) { return SmallVector<Value>(op.getOutputs()); })
      .Case([](GemmOp op) {
        SmallVector<Value> written{op.getC()};
        if (op.getActivation() == GemmActivation::gelu_tanh)
          written.push_back(op.getAux());
        if (op.getBiasGrad())
          written.push_back(op.getBiasGrad());
        return written;
      })
      .Case<CopyOp, AllReduceOp, ReduceScatterOp, AllGatherOp, RecvOp>(
          [](auto op) { return SmallVector<Value>{op.getTarget()}; })
      .Default([](Operation *) { return SmallVector<Value>{}; });
}

int64_t getByteOffset(Value buffer) {
  int64_t bytes = 0;
  auto elementBytes = [](Value of) {
    return getElementByteSize(cast<MemRefType>(of.getType()).getElementType());
  };
  while (auto view = buffer.getDefiningOp<ViewOp>()) {
    bytes += view.getOffset().value_or(0) * elementBytes(view);
    buffer = view.getSource();
  }
  if (auto resource = buffer.getDefiningOp<ResourceOp>();
      resource && resource.getPack())
    bytes += *resource.getPackElement() * elementBytes(resource) +
             getByteOffset(resource.getPack());
  return bytes;
}

ByteRange getByteRange(Value buffer) {
  uint64_t begin = getByteOffset(buffer);
  return {begin, begin + getByteSize(cast<MemRefType>(buffer.getType()))};
}

int64_t getStream(Operation *command) {
  return cast<IntegerAttr>(command->getAttr("stream")).getInt();
}

LogicalResult forEachProgram(Operation *root,
                             function_ref<LogicalResult(ProgramOp)> fn) {
  return failure(root->walk([&](ProgramOp program) {
                       return failed(fn(program)) ? WalkResult::interrupt()
                                                  : WalkResult::advance();
                     })
                     .wasInterrupted());
}

void eraseUndispatchedKernels(Operation *root, ArrayRef<Operation *> kernels) {
  SymbolTableCollection symbols;
  DenseSet<Operation *> dispatched;
  root->walk([&](DispatchOp dispatch) {
    dispatched.insert(symbols.lookupNearestSymbolFrom(dispatch, dispatch.getKernel()));
  });
  for (Operation *kernel : kernels)
    if (kernel && !dispatched.contains(kernel))
      kernel->erase();
}

GemmOp getGemmWriter(Value product, DispatchOp reader, bool onlyReader) {
  auto resource = product.getDefiningOp<ResourceOp>();
  if (!resource || resource.getKind() != ResourceKind::scratch ||
      resource.getUpdates())
    return nullptr;
  GemmOp gemm;
  for (Operation *user : product.getUsers()) {
    if (user == reader)
      continue;
    auto writer = dyn_cast<GemmOp>(user);
    if (writer && writer.getC() == product) {
      if (gemm)
        return nullptr;
      gemm = writer;
    } else if (onlyReader) {
      return nullptr;
    }
  }
  return gemm && gemm->isBeforeInBlock(reader) ? gemm : nullptr;
}

void moveBeforeInOrder(Operation *op, Operation *anchor) {
  assert(op->getBlock() == anchor->getBlock() && "moves within a block");
  // Unlinked and inserted again, `op` alone needs a new place in the order,
  // between its neighbours'. Asking the order numbers it at once: later, a
  // new op beside it (a view a fusion makes before the same command) would
  // leave it no neighbour in order to go between, and the block would be
  // numbered again.
  op->remove();
  anchor->getBlock()->getOperations().insert(anchor->getIterator(), op);
  (void)op->isBeforeInBlock(anchor);
}

Operation *getSoleKernelOp(DispatchOp dispatch, SymbolTableCollection &symbols) {
  if (dispatch.getOutputs().size() != 1)
    return nullptr;
  auto kernel = symbols.lookupNearestSymbolFrom<func::FuncOp>(dispatch, dispatch.getKernel());
  if (!kernel || kernel.isExternal() || !kernel.getBody().hasOneBlock())
    return nullptr;
  Block &body = kernel.getBody().front();
  if (body.getOperations().size() != 2)
    return nullptr;
  Operation *op = &body.front();
  auto ret = dyn_cast<func::ReturnOp>(body.back());
  if (!ret || ret.getNumOperands() != 1 || ret.getOperand(0) != op->getResult(0) ||
      op->getNumOperands() != body.getNumArguments())
    return nullptr;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (operand != body.getArgument(i))
      return nullptr;
  return op;
}

ResourceOp getStorage(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewOp>())
    buffer = view.getSource();
  auto resource = buffer.getDefiningOp<ResourceOp>();
  if (resource && resource.getPack())
    return getStorage(resource.getPack());
  return resource;
}

} // namespace mlir::tg::exec

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

std::optional<int64_t> ProgramOp::getAxisSize(StringRef axis) {
  for (auto [name, size] : llvm::zip(getMeshAxes(), getMeshShape()))
    if (cast<StringAttr>(name).getValue() == axis)
      return size;
  return std::nullopt;
}

LogicalResult ProgramOp::verify() {
  if (getMeshAxes().size() != getMeshShape().size())
    return emitOpError("has ") << getMeshAxes().size() << " mesh axes but "
                               << getMeshShape().size() << " mesh sizes";
  for (auto [name, size] : llvm::zip(getMeshAxes(), getMeshShape()))
    if (size < 1)
      return emitOpError("mesh axis '")
             << cast<StringAttr>(name).getValue() << "' has size " << size
             << "; sizes must be >= 1";
  for (Operation &op : getBlock())
    if (!isa<ResourceOp, ViewOp>(op) && !isCommand(&op))
      return op.emitOpError("cannot be in an exec.program: only resources, "
                            "views and commands can");
  return success();
}

//===----------------------------------------------------------------------===//
// ResourceOp, ViewOp
//===----------------------------------------------------------------------===//

int64_t ResourceOp::getByteSize() {
  return exec::getByteSize(getResult().getType());
}

SmallVector<ResourceOp> mlir::tg::exec::getPackMembers(ResourceOp pack) {
  SmallVector<ResourceOp> members;
  for (OpOperand &use : pack.getResult().getUses())
    if (auto member = dyn_cast<ResourceOp>(use.getOwner());
        member && member.getPack() == use.get())
      members.push_back(member);
  return members;
}

/// A member of a pack: inside it, of its kind and element type, without
/// roles the pack carries (updates) or the planner sets (offset).
static LogicalResult verifyMember(ResourceOp member) {
  // A pack may be a view: a pack of gradients in a gradient bucket.
  ResourceOp pack = getStorage(member.getPack());
  auto direct = member.getPack().getDefiningOp<ResourceOp>();
  if (!pack || (direct && direct.getPack()))
    return member.emitOpError("is packed into a buffer that is not a "
                              "resource outside any pack, or a view of one");
  MemRefType type = member.getType(),
             packType = cast<MemRefType>(member.getPack().getType());
  if (!member.getPackElement())
    return member.emitOpError("is packed without its element offset");
  if (pack.getKind() != member.getKind())
    return member.emitOpError("of kind '")
           << stringifyResourceKind(member.getKind())
           << "' is packed into a resource of kind '"
           << stringifyResourceKind(pack.getKind()) << "'";
  if (!isPackableKind(member.getKind()))
    return member.emitOpError("of kind '")
           << stringifyResourceKind(member.getKind())
           << "' cannot be packed (only parameters, moments, compute copies "
              "and scratch)";
  if (type.getElementType() != packType.getElementType())
    return member.emitOpError("cannot be packed into ")
           << packType << ": element types differ";
  uint64_t at = *member.getPackElement();
  if (type.getNumElements() > packType.getNumElements() ||
      at > uint64_t(packType.getNumElements() - type.getNumElements()))
    return member.emitOpError("cannot take ")
           << type.getNumElements() << " elements from element " << at << " of "
           << packType;
  // Kernels load vectors assuming every buffer starts on kBufferAlignment;
  // a scalar is loaded alone.
  int64_t elementBytes = getElementByteSize(type.getElementType());
  if (type.getRank() > 0 && (at * elementBytes) % kBufferAlignment)
    return member.emitOpError("starts at byte ")
           << at * elementBytes << " of its pack, not a multiple of "
           << kBufferAlignment;
  if (member.getUpdates() || member.getOffsetAttr())
    return member.emitOpError("is packed, so its pack, not the member, "
                              "updates state and is placed");
  return success();
}

/// A pack: unnamed, its members disjoint.
static LogicalResult verifyPack(ResourceOp pack, ArrayRef<ResourceOp> members) {
  if (pack.getName() || pack.getInit())
    return pack.emitOpError("packs resources, so it has no name or init rule "
                            "of its own (its members have)");
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (ResourceOp member : members)
    ranges.push_back(
        {*member.getPackElement(),
         *member.getPackElement() + member.getType().getNumElements()});
  llvm::sort(ranges);
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return pack.emitOpError("has members overlapping at element ")
             << ranges[i].first;
  return success();
}

LogicalResult ResourceOp::verify() {
  MemRefType type = getResult().getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity())
    return emitOpError("needs a static, identity-layout memref, not ") << type;
  ResourceKind kind = getKind();
  if (getPack() && failed(verifyMember(*this)))
    return failure();
  SmallVector<ResourceOp> members = getPackMembers(*this);
  if (!members.empty() && failed(verifyPack(*this, members)))
    return failure();
  bool named = kind != ResourceKind::scratch && kind != ResourceKind::constant;
  if (named && !getName() && members.empty())
    return emitOpError("of kind '")
           << stringifyResourceKind(kind) << "' needs a name";
  if (getInit() && kind != ResourceKind::parameter)
    return emitOpError("has an init rule but is not a parameter");
  if (kind == ResourceKind::constant) {
    if (!getValue())
      return emitOpError("of kind 'constant' needs a value");
    auto valueType = cast<ShapedType>(getValue()->getType());
    if (valueType.getShape() != type.getShape() ||
        valueType.getElementType() != type.getElementType())
      return emitOpError("value of type ")
             << valueType << " does not match the buffer " << type;
  } else if (getValue()) {
    return emitOpError("has a value but is not a constant");
  }
  if (Value state = getUpdates()) {
    ResourceOp target = getStorage(state);
    if (!target || !target.isState() ||
        target.getKind() == ResourceKind::constant)
      return emitOpError("updates a buffer that is not a state resource");
    if (state.getType() != type)
      return emitOpError("updates ")
             << state.getType() << " with a buffer of type " << type;
  }
  if (getOffsetAttr() && getOffsetAttr().getInt() < 0)
    return emitOpError("has a negative offset");
  return success();
}

LogicalResult ViewOp::verify() {
  auto from = getSource().getType(), to = getResult().getType();
  if (from.getElementType() != to.getElementType())
    return emitOpError("cannot view ") << from << " as " << to
                                       << ": element types differ";
  if (!getOffset()) {
    if (from.getNumElements() != to.getNumElements())
      return emitOpError("cannot view ")
             << from << " as " << to
             << ": element counts differ (a part of a buffer needs an offset)";
    return success();
  }
  // Unsigned offsets: a view larger than its source has no room at any.
  if (to.getNumElements() > from.getNumElements() ||
      *getOffset() > uint64_t(from.getNumElements() - to.getNumElements()))
    return emitOpError("cannot view ")
           << to.getNumElements() << " elements from element " << *getOffset()
           << " of " << from << ": it has " << from.getNumElements();
  return success();
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

/// Kernels are functions of a module, or entries of an exec.binary.
LogicalResult DispatchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  // A serialized kernel module is an exec.binary, which lists its kernels.
  Operation *target = symbols.lookupNearestSymbolFrom(
      *this, getKernel().getRootReference());
  if (!isa_and_nonnull<BinaryOp>(target))
    target = symbols.lookupNearestSymbolFrom(*this, getKernel());
  if (!target)
    return emitOpError("kernel ") << getKernel() << " does not exist";
  unsigned numInputs = getInputs().size(), numOutputs = getOutputs().size();
  if (auto func = dyn_cast<func::FuncOp>(target)) {
    FunctionType type = func.getFunctionType();
    bool onTensors = isKernelOnTensors(type);
    unsigned expected = onTensors ? numInputs : numInputs + numOutputs;
    if (type.getNumInputs() != expected ||
        (onTensors && type.getNumResults() != numOutputs))
      return emitOpError("passes ")
             << numInputs << " inputs and " << numOutputs
             << " outputs to a kernel of type " << type;
    SmallVector<Value> buffers(getInputs());
    buffers.append(getOutputs().begin(), getOutputs().end());
    SmallVector<Type> expectTypes(type.getInputs());
    if (onTensors)
      expectTypes.append(type.getResults().begin(), type.getResults().end());
    for (auto [i, pair] : llvm::enumerate(llvm::zip(buffers, expectTypes))) {
      auto [buffer, expected] = pair;
      auto shaped = cast<ShapedType>(expected);
      auto actual = cast<MemRefType>(buffer.getType());
      if (shaped.getShape() != actual.getShape() ||
          shaped.getElementType() != actual.getElementType())
        return emitOpError("operand #")
               << i << " is " << actual << " but the kernel takes " << expected;
    }
    return success();
  }
  if (auto binary = dyn_cast<BinaryOp>(target)) {
    StringRef name = getKernel().getLeafReference().getValue();
    for (auto [kernel, count] :
         llvm::zip(binary.getKernels(), binary.getOperandCounts()))
      if (cast<StringAttr>(kernel).getValue() == name) {
        if (count != numInputs + numOutputs)
          return emitOpError("passes ")
                 << numInputs + numOutputs << " buffers to kernel '" << name
                 << "', which takes " << count;
        return success();
      }
    return emitOpError("kernel '") << name << "' is not in " << getKernel();
  }
  // A kernel already lowered below tensors and memrefs (llvm.func with
  // bare pointers) takes one argument per buffer.
  if (auto function = dyn_cast<FunctionOpInterface>(target)) {
    if (function.getNumArguments() != numInputs + numOutputs)
      return emitOpError("passes ")
             << numInputs + numOutputs << " buffers to a kernel taking "
             << function.getNumArguments();
    return success();
  }
  return emitOpError("kernel ") << getKernel()
                                << " is neither a function nor a binary";
}

GemmOp::Operand GemmOp::getOperandLayout(unsigned operand) {
  int64_t m = getM(), n = getN(), k = getK();
  Operand layout;
  // The attributes are unsigned; a layout's sizes and strides are int64_t.
  auto of = [](int64_t rows, int64_t cols, uint64_t ld, uint64_t stride, uint64_t inner) {
    return Operand{rows, cols, int64_t(ld), int64_t(stride), int64_t(inner)};
  };
  switch (operand) {
  case 0:
    layout = getTransposeA() ? of(k, m, getLda(), getStrideA(), getInnerStrideA())
                             : of(m, k, getLda(), getStrideA(), getInnerStrideA());
    break;
  case 1:
    layout = getTransposeB() ? of(n, k, getLdb(), getStrideB(), getInnerStrideB())
                             : of(k, n, getLdb(), getStrideB(), getInnerStrideB());
    break;
  default:
    layout = of(m, n, getLdc(), getStrideC(), getInnerStrideC());
  }
  if (layout.ld == 0)
    layout.ld = layout.cols;
  return layout;
}

void GemmOp::setOperand(unsigned operand, Value buffer, int64_t ld,
                        int64_t stride, int64_t innerStride) {
  switch (operand) {
  case 0:
    getAMutable().assign(buffer);
    setLda(ld);
    setStrideA(stride);
    setInnerStrideA(innerStride);
    break;
  case 1:
    getBMutable().assign(buffer);
    setLdb(ld);
    setStrideB(stride);
    setInnerStrideB(innerStride);
    break;
  default:
    getCMutable().assign(buffer);
    setLdc(ld);
    setStrideC(stride);
    setInnerStrideC(innerStride);
  }
}

LogicalResult GemmOp::verify() {
  Type element = getA().getType().getElementType();
  if (getB().getType().getElementType() != element ||
      getC().getType().getElementType() != element)
    return emitOpError("needs a, b and c of one element type");
  if (!isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(element))
    return emitOpError("supports f16, bf16, f32 and f64, not ") << element;
  int64_t m = getM(), n = getN(), k = getK(), batch = getBatch();
  int64_t inner = getInnerBatch();
  if (m < 1 || n < 1 || k < 1 || batch < 1)
    return emitOpError("needs m, n, k and batch >= 1");
  if (inner < 1 || batch % inner != 0)
    return emitOpError("has inner_batch ")
           << inner << ", which does not divide batch " << batch;
  if (Value bias = getBias()) {
    auto type = cast<MemRefType>(bias.getType());
    if (type.getElementType() != element || type.getNumElements() != n)
      return emitOpError("needs a bias of n = ")
             << n << " elements of " << element << ", not " << type;
  }
  GemmActivation activation = getActivation();
  if (activation == GemmActivation::none) {
    if (getAux())
      return emitOpError("has an aux buffer but no activation");
  } else {
    auto aux = getAux() ? dyn_cast<MemRefType>(getAux().getType()) : nullptr;
    if (!aux || aux.getElementType() != element || aux.getNumElements() != m * n)
      return emitOpError("with activation ")
             << stringifyGemmActivation(activation) << " needs an aux buffer of m x n = "
             << m * n << " elements of " << element;
    if (batch != 1 || !(getLdc() == 0 || int64_t(getLdc()) == n))
      return emitOpError("with activation ")
             << stringifyGemmActivation(activation)
             << " needs one product (batch 1) and a packed c";
    if (activation == GemmActivation::gelu_tanh_grad && getBias())
      return emitOpError("with activation gelu_tanh_grad takes no bias");
  }
  if (Value biasGrad = getBiasGrad()) {
    if (activation != GemmActivation::gelu_tanh_grad)
      return emitOpError(
          "writes a bias gradient only with activation gelu_tanh_grad");
    auto type = cast<MemRefType>(biasGrad.getType());
    if (type.getElementType() != element || type.getNumElements() != n)
      return emitOpError("needs a bias_grad of n = ")
             << n << " elements of " << element << ", not " << type;
    if (getStorage(biasGrad) &&
        llvm::any_of(
            ValueRange{getA(), getB(), getC(), getAux()}, [&](Value other) {
              return other && getStorage(other) == getStorage(biasGrad);
            }))
      return emitOpError("writes its bias_grad into the storage of a, b, c "
                         "or aux");
  }
  if (Value addend = getAddend()) {
    auto type = cast<MemRefType>(addend.getType());
    if (type.getElementType() != element || type.getNumElements() != m * n)
      return emitOpError("needs an addend of m x n = ")
             << m * n << " elements of " << element << ", not " << type;
    if (batch != 1 || !(getLdc() == 0 || int64_t(getLdc()) == n) ||
        activation != GemmActivation::none)
      return emitOpError("with an addend needs one product (batch 1), a "
                         "packed c and no activation");
    // Apart: the CPU's BLAS call overwrites c before its epilogue reads the
    // addend, and cuBLASLt's kernels would race on a partial overlap.
    if (getStorage(addend) && getStorage(addend) == getStorage(getC()))
      return emitOpError("adds an addend from the storage of c");
  }
  static constexpr StringLiteral names[] = {"a", "b", "c"};
  for (unsigned index = 0; index < 3; ++index) {
    StringRef name = names[index];
    Operand layout = getOperandLayout(index);
    Value buffer = getOperandBuffer(index);
    if (layout.ld < layout.cols || layout.stride < 0 || layout.innerStride < 0)
      return emitOpError("operand '")
             << name << "' has rows of " << layout.cols
             << " elements but leading dimension " << layout.ld
             << ", or a negative batch stride";
    // The last element the batch's last product touches, plus one.
    int64_t need = (batch / inner - 1) * layout.stride +
                   (inner - 1) * layout.innerStride +
                   (layout.rows - 1) * layout.ld + layout.cols;
    int64_t has = cast<MemRefType>(buffer.getType()).getNumElements();
    if (has < need)
      return emitOpError("operand '")
             << name << "' has " << has << " elements; batch " << batch
             << " (inner " << inner << ") with strides " << layout.stride
             << ", " << layout.innerStride << " and leading dimension "
             << layout.ld << " needs " << need;
  }
  return success();
}

SmallVector<int64_t, 4> AttentionOp::getTensorShape(unsigned i) {
  bool query = isQuerySide(i);
  return {int64_t(getBatch()), int64_t(query ? getQueryHeads() : getKeyHeads()),
          int64_t(query ? getQueryLen() : getKeyLen()), int64_t(getHeadDim())};
}

unsigned AttentionOp::getStridesStart(unsigned i) {
  unsigned tensors = 0;
  for (unsigned j = 0; j < i; ++j)
    tensors += isTensorOperand(j);
  return 3 * tensors;
}

LogicalResult AttentionOp::verify() {
  const unsigned inputs = getGradient() ? 6 : 3, outputs = getGradient() ? 4 : 2;
  if (getInputs().size() != inputs || getOutputs().size() != outputs)
    return emitOpError() << "needs " << inputs << " inputs and " << outputs
                         << " outputs " << (getGradient() ? "with" : "without")
                         << " `gradient`";
  if (getHeadDim() != 64 && getHeadDim() != 128)
    return emitOpError() << "has head dim " << getHeadDim()
                         << "; the kernels take 64 or 128";
  const int64_t batch = getBatch(), queryHeads = getQueryHeads(),
                keyHeads = getKeyHeads(), queryLen = getQueryLen(),
                keyLen = getKeyLen(), headDim = getHeadDim();
  if (batch < 1 || queryHeads < 1 || keyHeads < 1 || queryLen < 1 ||
      keyLen < 1 || int64_t(getWindow()) < 0 || queryHeads % keyHeads != 0)
    return emitOpError("needs positive sizes, a window from 0 and query heads "
                       "a multiple of key heads");
  if (auto frequencies = getRopeFrequencies())
    if (int64_t(frequencies->size()) != headDim / 2 ||
        llvm::any_of(*frequencies,
                     [](double f) { return !std::isfinite(f) || f < 0; }))
      return emitOpError() << "needs " << headDim / 2
                           << " finite, non-negative rope frequencies (one a "
                              "pair of the head dim), not "
                           << frequencies->size();
  if (getCudnn() && getRopeFrequencies())
    return emitOpError("cudnn with rope frequencies: the runtime's cuDNN "
                       "graph cannot rotate (drop cudnn)");
  const unsigned strides = getStridesStart(getNumAttentionOperands());
  if (getStrides().size() != strides)
    return emitOpError() << "needs 3 strides for each of its " << strides / 3
                         << " bf16 operands, not " << getStrides().size();
  for (unsigned i = 0; i < getNumAttentionOperands(); ++i) {
    auto type = cast<MemRefType>(getAttentionOperand(i).getType());
    if (!isTensorOperand(i)) {
      int64_t rows = batch * queryHeads * queryLen;
      if (!type.getElementType().isF32() || type.getNumElements() != rows)
        return emitOpError() << "operand " << i << " must hold the f32 row "
                             << "statistics (" << rows << " elements)";
      continue;
    }
    ArrayRef<int64_t> s = getStrides().slice(getStridesStart(i), 3);
    SmallVector<int64_t, 4> shape = getTensorShape(i);
    int64_t heads = shape[1], rows = shape[2];
    int64_t last = (batch - 1) * s[0] + (heads - 1) * s[1] + (rows - 1) * s[2] + headDim;
    if (!type.getElementType().isBF16() || llvm::any_of(s, [](int64_t x) {
          return x < 0 || x % 8 != 0;
        }) || last > type.getNumElements())
      return emitOpError() << "operand " << i << " must be a bf16 buffer "
                           << "holding [" << batch << ", " << heads << ", "
                           << rows << ", " << headDim << "] at strides "
                           << s[0] << ", " << s[1] << ", " << s[2]
                           << " (non-negative multiples of 8)";
  }
  return success();
}

LogicalResult CopyOp::verify() {
  if (getByteSize(getSource().getType()) != getByteSize(getTarget().getType()))
    return emitOpError("copies ")
           << getByteSize(getSource().getType()) << " bytes into "
           << getByteSize(getTarget().getType());
  return success();
}

/// The size of `axis` in the enclosing program's mesh, or an error.
static FailureOr<int64_t> axisSize(Operation *op, StringRef axis) {
  auto program = op->getParentOfType<ProgramOp>();
  if (!program)
    return op->emitOpError("must be inside an exec.program");
  std::optional<int64_t> size = program.getAxisSize(axis);
  if (!size)
    return op->emitOpError("runs over mesh axis '")
           << axis << "', which the program's mesh " << program.getMeshAxes()
           << " does not have";
  return *size;
}

/// Checks `target` holds `factor` times (or 1/`factor` of) `source`.
static LogicalResult verifyCollective(Operation *op, Value source, Value target,
                                      StringRef axis, int64_t scaleSource,
                                      int64_t scaleTarget) {
  auto size = axisSize(op, axis);
  if (failed(size))
    return failure();
  auto from = cast<MemRefType>(source.getType());
  auto to = cast<MemRefType>(target.getType());
  if (from.getElementType() != to.getElementType())
    return op->emitOpError("needs one element type, not ")
           << from.getElementType() << " and " << to.getElementType();
  // What the runtimes' communication libraries reduce (MPI, NCCL).
  Type element = from.getElementType();
  if (!(element.isF32() || element.isF64() || element.isBF16() ||
        element.isF16() || element.isInteger(32)))
    return op->emitOpError("has element type ")
           << element << "; collectives take f32, f64, bf16, f16 or i32";
  int64_t in = from.getNumElements() * (scaleSource ? 1 : *size);
  int64_t out = to.getNumElements() * (scaleTarget ? 1 : *size);
  if (in != out)
    return op->emitOpError("over '")
           << axis << "' (size " << *size << ") cannot take " << from
           << " to " << to;
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, getSource(), getTarget(), getAxis(), 1, 1);
}
LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(*this, getSource(), getTarget(), getAxis(), 1, 0);
}
LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, getSource(), getTarget(), getAxis(), 0, 1);
}

static LogicalResult verifyPeer(Operation *op, StringRef axis, int64_t peer) {
  auto size = axisSize(op, axis);
  if (failed(size))
    return failure();
  if (peer < 0 || peer >= *size)
    return op->emitOpError("peer ") << peer << " is outside mesh axis '"
                                    << axis << "' of size " << *size;
  return success();
}
LogicalResult SendOp::verify() { return verifyPeer(*this, getAxis(), getPeer()); }
LogicalResult RecvOp::verify() { return verifyPeer(*this, getAxis(), getPeer()); }

//===----------------------------------------------------------------------===//
// DispatchRegionOp, BinaryOp
//===----------------------------------------------------------------------===//

LogicalResult DispatchRegionOp::verify() {
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but returns "
           << getResultTypes();
  return success();
}

LogicalResult BinaryOp::verify() {
  if (getKernels().size() != getOperandCounts().size() ||
      getKernels().size() != getSymbols().size())
    return emitOpError("has ") << getKernels().size() << " kernels, "
                               << getSymbols().size() << " symbols and "
                               << getOperandCounts().size()
                               << " operand counts";
  if (getImage().empty())
    return emitOpError("has an empty image");
  size_t launches = getLaunchSymbols().size();
  if (getFormat() == BinaryFormat::elf) {
    if (launches || !getLaunchCounts().empty())
      return emitOpError("is a host shared object and cannot have launches");
    return success();
  }
  if (getLaunchCounts().size() != getKernels().size())
    return emitOpError("has ") << getLaunchCounts().size()
                               << " launch counts for " << getKernels().size()
                               << " kernels";
  int64_t total = 0;
  for (int64_t count : getLaunchCounts()) {
    if (count < 1)
      return emitOpError("has a kernel with no launch");
    total += count;
  }
  if ((size_t)total != launches || getLaunchGrid().size() != launches ||
      getLaunchBlock().size() != launches ||
      getLaunchSharedBytes().size() != launches)
    return emitOpError("has ")
           << total << " launches by its counts, " << launches
           << " launch symbols, " << getLaunchGrid().size() << " grids, "
           << getLaunchBlock().size() << " block sizes and "
           << getLaunchSharedBytes().size() << " shared-memory sizes";
  for (size_t j = 0; j < launches; ++j)
    if (getLaunchGrid()[j] < 1 || getLaunchBlock()[j] < 1 ||
        getLaunchBlock()[j] > 1024 || getLaunchSharedBytes()[j] < 0)
      return emitOpError("launch ")
             << j << " (" << getLaunchSymbols()[j] << ") has grid "
             << getLaunchGrid()[j] << ", block " << getLaunchBlock()[j]
             << " and " << getLaunchSharedBytes()[j]
             << " shared bytes: a CUDA launch needs a grid of at least one "
                "block of 1 to 1024 threads";
  return success();
}
