// Lowers a tg training step to a Program: the arena plan, the interface
// slots, and the command list with one outlined kernel per distinct op.
#include "tg/IR/TgDialect.h"
#include "tg/IR/TgOps.h"
#include "tg/Passes/BufferPlan.h"
#include "tg/Passes/KernelBodies.h"
#include "tg/Passes/Program.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg {
namespace {

constexpr llvm::StringLiteral kParamPrefix = "param:";

/// The interface name of each argument (HF name or tg.input) and result.
struct Interface {
  SmallVector<std::string> args, results;
  SmallVector<std::optional<unsigned>> updates; // result -> argument
};

Interface readInterface(func::FuncOp func) {
  Interface in;
  llvm::StringMap<unsigned> argByName;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto param = func.getArgAttrOfType<StringAttr>(i, kParamAttr);
    auto input = func.getArgAttrOfType<StringAttr>(i, kInputAttr);
    std::string name = param   ? param.str()
                       : input ? input.str()
                               : "arg" + std::to_string(i);
    argByName[name] = i;
    in.args.push_back(name);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto output = func.getResultAttrOfType<StringAttr>(i, kOutputAttr);
    std::string name = output ? output.str() : "result" + std::to_string(i);
    // "param:X" updates parameter X; "adam_m:X" / "adam_v:X" the same-named
    // optimizer state input.
    StringRef updated = name;
    bool isUpdate = updated.consume_front(kParamPrefix) ||
                    updated.starts_with("adam_m:") ||
                    updated.starts_with("adam_v:");
    auto it = argByName.find(updated);
    in.updates.push_back(isUpdate && it != argByName.end()
                             ? std::optional<unsigned>(it->second)
                             : std::nullopt);
    in.results.push_back(name);
  }
  return in;
}

/// Little-endian bytes of a dense constant.
FailureOr<std::vector<uint8_t>> constantBytes(ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense)
    return op.emitOpError("needs a dense value to be lowered");
  std::vector<uint8_t> bytes;
  unsigned width = (dense.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  auto append = [&](const APInt &bits) {
    for (unsigned b = 0; b < width; ++b)
      bytes.push_back(bits.extractBitsAsZExtValue(8, 8 * b));
  };
  if (isa<FloatType>(dense.getElementType())) {
    for (const APFloat &v : dense.getValues<APFloat>())
      append(v.bitcastToAPInt());
  } else {
    for (const APInt &v : dense.getValues<APInt>())
      append(v);
  }
  return bytes;
}

/// A name-independent description of what a kernel computes: ops with equal
/// keys share one kernel.
std::string kernelKey(Operation *op) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << op->getAttrDictionary();
  for (Type t : op->getOperandTypes())
    os << "," << t;
  os << "->";
  for (Type t : op->getResultTypes())
    os << "," << t;
  return key;
}

MemRefType memrefOf(Type tensor) {
  auto type = cast<RankedTensorType>(tensor);
  return MemRefType::get(type.getShape(), type.getElementType());
}

GemmCall gemmOf(MatmulOp op) {
  auto lhs = cast<RankedTensorType>(op.getLhs().getType());
  auto rhs = cast<RankedTensorType>(op.getRhs().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  GemmCall g;
  g.elementType = out.getElementType();
  g.transposeA = op.getTransposeLhs();
  g.transposeB = op.getTransposeRhs();
  int64_t rank = out.getRank();
  g.m = out.getDimSize(rank - 2);
  g.n = out.getDimSize(rank - 1);
  g.k = lhs.getDimSize(rank - (g.transposeA ? 2 : 1));
  g.batch = out.getNumElements() / std::max<int64_t>(1, g.m * g.n);
  g.strideA = g.m * g.k;
  g.strideB = rhs.getRank() == 2 ? 0 : g.k * g.n;
  g.strideC = g.m * g.n;
  // A matrix shared by all batches of an untransposed lhs: one tall GEMM.
  if (g.strideB == 0 && !g.transposeA && g.batch > 1) {
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = g.m * g.k;
    g.strideC = g.m * g.n;
  }
  return g;
}

class ProgramBuilder {
public:
  ProgramBuilder(func::FuncOp func, const LoweringOptions &options)
      : func(func), options(options), builder(func.getContext()) {}

  FailureOr<Program> build() {
    Interface interface = readInterface(func);
    BufferPlan plan = planBuffers(func, interface.updates);
    program.arenaBytes = plan.stateBytes + plan.workingBytes;
    program.stateBytes = plan.stateBytes;
    program.peakWorkingBytes = plan.workingBytes;

    addSlots(interface, plan);
    program.kernels = ModuleOp::create(func.getLoc());
    for (Operation &op : func.getBody().front())
      if (failed(lower(&op, plan)))
        return failure();
    for (auto [value, arg] : plan.copiesAtEnd)
      program.commands.push_back({ProgramCommand::Kind::Copy, 0, {},
                                  {plan.ranges[value], plan.ranges[arg]},
                                  "copy back"});
    return std::move(program);
  }

private:
  void addSlots(const Interface &interface, BufferPlan &plan) {
    llvm::StringMap<unsigned> slotByName;
    auto addSlot = [&](const std::string &name, Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      slotByName[name] = program.slots.size();
      program.slots.push_back({name, type.getElementType(),
                               SmallVector<int64_t>(type.getShape()),
                               plan.ranges[v]});
    };
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      addSlot(interface.args[i], arg);
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (auto [i, result] : llvm::enumerate(ret.getOperands()))
      if (!interface.updates[i])
        addSlot(interface.results[i], result);

    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      auto param = func.getArgAttrOfType<StringAttr>(i, kParamAttr);
      uint64_t bytes = tensorBytes(arg.getType());
      if (!param) {
        if (StringRef(interface.args[i]).starts_with("adam_"))
          program.optimizerBytes += bytes;
        continue;
      }
      program.paramBytes += bytes;
      auto init = func.getArgAttrOfType<StringAttr>(i, kInitAttr);
      std::string name = param.str();
      auto slotOf = [&](const std::string &slot) {
        auto it = slotByName.find(slot);
        return it == slotByName.end() ? ~0u : it->second;
      };
      program.parameters.push_back({name, init ? init.str() : "zeros",
                                    slotByName[name], slotOf("adam_m:" + name),
                                    slotOf("adam_v:" + name)});
    }
  }

  LogicalResult lower(Operation *op, BufferPlan &plan) {
    if (isa<ReshapeOp, func::ReturnOp>(op))
      return success();
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto bytes = constantBytes(constant);
      if (failed(bytes))
        return failure();
      program.constants.push_back({plan.ranges[constant.getResult()], *bytes});
      return success();
    }
    ProgramCommand command;
    command.label = labelOf(op);
    for (Value v : op->getOperands())
      command.operands.push_back(plan.ranges[v]);
    for (Value v : op->getResults())
      command.operands.push_back(plan.ranges[v]);

    auto matmul = dyn_cast<MatmulOp>(op);
    if (matmul && options.gemm == GemmLowering::Library) {
      command.kind = ProgramCommand::Kind::Gemm;
      command.gemm = gemmOf(matmul);
      program.commands.push_back(std::move(command));
      return success();
    }
    if (!hasKernelBody(op))
      return op->emitOpError("has no CPU kernel lowering")
             << (isa<AttentionOp, AttentionGradOp>(op)
                     ? " (run tg-decompose-attention first)"
                     : "");
    auto kernel = kernelFor(op);
    if (failed(kernel))
      return failure();
    command.kind = ProgramCommand::Kind::Kernel;
    command.kernel = *kernel;
    program.commands.push_back(std::move(command));
    return success();
  }

  FailureOr<unsigned> kernelFor(Operation *op) {
    std::string key = kernelKey(op);
    auto [it, inserted] = kernelByKey.try_emplace(key, program.kernelNames.size());
    if (!inserted)
      return it->second;
    std::string name = "k" + std::to_string(it->second) + "_" +
                       op->getName().stripDialect().str();
    SmallVector<Type> argTypes;
    for (Type t : op->getOperandTypes())
      argTypes.push_back(memrefOf(t));
    for (Type t : op->getResultTypes())
      argTypes.push_back(memrefOf(t));
    builder.setInsertionPointToEnd(program.kernels->getBody());
    auto kernel = func::FuncOp::create(builder, op->getLoc(), name,
                                       builder.getFunctionType(argTypes, {}));
    Block *entry = kernel.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    auto args = entry->getArguments();
    unsigned numOperands = op->getNumOperands();
    if (failed(emitKernelBody(builder, op, args.take_front(numOperands),
                              args.drop_front(numOperands))))
      return failure();
    func::ReturnOp::create(builder, op->getLoc());
    program.kernelNames.push_back(name);
    program.kernelOperandCounts.push_back(argTypes.size());
    return it->second;
  }

  static std::string labelOf(Operation *op) {
    std::string label = op->getName().getStringRef().str();
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      label += " " + name.getName().str();
    return label;
  }

  func::FuncOp func;
  const LoweringOptions &options;
  OpBuilder builder;
  Program program;
  llvm::StringMap<unsigned> kernelByKey;
};

} // namespace

FailureOr<Program> lowerToProgram(func::FuncOp step,
                                  const LoweringOptions &options) {
  if (!step.getBody().hasOneBlock())
    return step.emitOpError("must have a single block to be lowered");
  step.getContext()
      ->loadDialect<arith::ArithDialect, linalg::LinalgDialect,
                    math::MathDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  return ProgramBuilder(step, options).build();
}

} // namespace mlir::tg
