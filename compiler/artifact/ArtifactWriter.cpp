// exec.program + exec.binary -> the .tgx FlatBuffers image.
#include "tg/Artifact/ArtifactWriter.h"

#include "tg/Exec/IR/ExecOps.h"
#include "tg/IR/TgDialect.h"
#include "tg/runtime/Artifact.h"
#include "tg/runtime/EmbeddedArtifact.h"
#include "tg/runtime/Hash.h"
#include "tgx_generated.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/SwapByteOrder.h"

#include <map>

namespace mlir::tg {
namespace tgx = ::tg::tgx;
namespace {
using exec::ResourceKind;
using exec::ResourceOp;

FailureOr<tgx::DType> dtypeOf(Operation *where, Type type) {
  if (type.isF32())
    return tgx::DType_F32;
  if (type.isF64())
    return tgx::DType_F64;
  if (type.isBF16())
    return tgx::DType_BF16;
  if (type.isF16())
    return tgx::DType_F16;
  if (type.isInteger(32))
    return tgx::DType_I32;
  if (type.isInteger(64))
    return tgx::DType_I64;
  return where->emitOpError("has element type ")
         << type << ", which the .tgx format cannot store";
}

tgx::GemmActivation activationOf(exec::GemmActivation activation) {
  switch (activation) {
  case exec::GemmActivation::none:
    return tgx::GemmActivation_None;
  case exec::GemmActivation::gelu_tanh:
    return tgx::GemmActivation_GeluTanh;
  case exec::GemmActivation::gelu_tanh_grad:
    return tgx::GemmActivation_GeluTanhGrad;
  }
  llvm_unreachable("an exec.gemm activation the format does not know");
}

/// What a GEMM adds as it writes c (its operands after c: the bias or its
/// gradient, then the addend).
tgx::GemmEpilogue epilogueOf(exec::GemmOp gemm) {
  if (gemm.getBiasGrad())
    return tgx::GemmEpilogue_BiasGrad;
  if (gemm.getAddend())
    return gemm.getBias() ? tgx::GemmEpilogue_BiasAddend
                          : tgx::GemmEpilogue_Addend;
  return gemm.getBias() ? tgx::GemmEpilogue_Bias : tgx::GemmEpilogue_None;
}

/// The slot name the runtime and checkpoints know a state resource by.
std::string slotName(ResourceOp r) {
  std::string name = r.getName()->str();
  if (r.getKind() == ResourceKind::adam_m)
    return "adam_m:" + name;
  if (r.getKind() == ResourceKind::adam_v)
    return "adam_v:" + name;
  if (r.getKind() == ResourceKind::compute_copy)
    return "compute:" + name;
  return name;
}

/// A parameter's initialisation rule as the runtime applies it.
FailureOr<std::pair<tgx::InitKind, double>> initOf(ResourceOp p) {
  auto rule = p.getInit() ? dyn_cast<InitAttr>(*p.getInit()) : InitAttr();
  if (!rule)
    return p.emitOpError("needs a #tg.init initialisation rule");
  switch (rule.getKind()) {
  case InitKind::Zeros:
    return std::make_pair(tgx::InitKind_Zeros, 0.0);
  case InitKind::Ones:
    return std::make_pair(tgx::InitKind_Ones, 0.0);
  case InitKind::Normal:
    return std::make_pair(tgx::InitKind_Normal, rule.getStdValue());
  }
  llvm_unreachable("unknown init kind");
}

/// Little-endian bytes of a dense constant.
std::vector<uint8_t> constantBytes(DenseElementsAttr dense) {
  std::vector<uint8_t> bytes;
  unsigned bits = dense.getElementType().getIntOrFloatBitWidth();
  unsigned width = (bits + 7) / 8;
  // Whole-byte elements are stored as they are in the attribute (one of
  // them for a splat) on a little-endian host: copied, not converted element
  // by element (an APFloat each took a tenth of GPT-3 175B's CUDA compile).
  if (bits % 8 == 0 && llvm::sys::IsLittleEndianHost) {
    ArrayRef<char> raw = dense.getRawData();
    int64_t copies = dense.isSplat() ? dense.getNumElements() : 1;
    bytes.reserve(raw.size() * copies);
    for (int64_t i = 0; i < copies; ++i)
      bytes.insert(bytes.end(), raw.begin(), raw.end());
    return bytes;
  }
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

class TgxWriter {
public:
  TgxWriter(ModuleOp module, const ArtifactInfo &info)
      : module(module), info(info), fbb(1 << 20) {}

  FailureOr<std::vector<uint8_t>> write() {
    auto train = module.lookupSymbol<exec::ProgramOp>("train_step");
    if (!train)
      return module.emitError("a .tgx holds an exec.program @train_step; "
                              "the module has none");
    if (failed(writeBinaries()))
      return failure();
    modulesVector = fbb.CreateVector(modules);
    // What every program records alike, written once.
    targetCpuString = fbb.CreateString(targetCpu);
    producerString = fbb.CreateString(info.producer);
    modelJsonString = fbb.CreateString(info.modelJson);
    // The functions beside the training step (@eval_step, @logits), each
    // a whole program sharing the kernel modules.
    std::vector<flatbuffers::Offset<tgx::Program>> functions;
    for (auto other : module.getOps<exec::ProgramOp>()) {
      if (other == train)
        continue;
      auto written = writeProgram(other, {});
      if (failed(written))
        return failure();
      functions.push_back(*written);
    }
    auto root = writeProgram(train, functions);
    if (failed(root))
      return failure();
    tgx::FinishProgramBuffer(fbb, *root);
    std::vector<uint8_t> image(fbb.GetBufferPointer(),
                               fbb.GetBufferPointer() + fbb.GetSize());
    // The checksum trailer over the whole file (docs/artifact.md).
    ::tg::runtime::sealArtifact(image);
    return image;
  }

private:
  FailureOr<flatbuffers::Offset<tgx::Program>>
  writeProgram(exec::ProgramOp p,
               const std::vector<flatbuffers::Offset<tgx::Program>> &functions) {
    program = p;
    slots.clear();
    parameters.clear();
    constants.clear();
    commands.clear();
    if (!program.getArenaSize())
      return program.emitOpError("is not planned: run exec-plan-buffers");
    if (failed(writeResources()) || failed(writeCommands()))
      return failure();
    std::vector<int64_t> meshShape(program.getMeshShape().begin(),
                                   program.getMeshShape().end());
    std::vector<flatbuffers::Offset<flatbuffers::String>> meshAxes;
    for (Attribute axis : program.getMeshAxes())
      meshAxes.push_back(fbb.CreateString(cast<StringAttr>(axis).str()));
    auto mesh = tgx::CreateMeshDirect(fbb, &meshShape, &meshAxes);
    auto train = tgx::CreateTrainInfo(
        fbb, program.getBatchSize(), program.getSeqLen(),
        program.getVocabSize(), uint64_t(program.getSeed()),
        program.getFlopsPerStep().convertToDouble());
    return tgx::CreateProgram(
        fbb, ::tg::runtime::kFormatVersion, target, targetCpuString, producerString,
        modelJsonString, mesh, train,
        *program.getArenaSize(), fbb.CreateVector(slots),
        fbb.CreateVector(parameters), fbb.CreateVector(constants),
        modulesVector, fbb.CreateVector(commands),
        fbb.CreateString(program.getSymName().str()),
        functions.empty() ? 0 : fbb.CreateVector(functions));
  }

  /// The arena bytes of a buffer (a view's start in its storage).
  FailureOr<tgx::BufferRange> rangeOf(Value buffer) {
    ResourceOp storage = exec::getStorage(buffer);
    if (!storage || !storage.getOffset())
      return program.emitOpError("has a buffer without an arena offset");
    return tgx::BufferRange(
        *storage.getOffset() + exec::getByteOffset(buffer),
        exec::getByteSize(cast<MemRefType>(buffer.getType())));
  }

  /// The index of mesh axis `name` in the program's mesh; an error on `r`
  /// when the mesh has no such axis.
  FailureOr<uint32_t> meshAxisOf(ResourceOp r, StringRef name) {
    auto axes = llvm::to_vector(program.getMeshAxes().getAsValueRange<StringAttr>());
    auto axis = llvm::find(axes, name);
    if (axis == axes.end())
      return r.emitOpError("is split over mesh axis '")
             << name << "', which the program's mesh does not have";
    return uint32_t(axis - axes.begin());
  }

  /// A parameter's split over a mesh axis (its tg.shard), or none.
  FailureOr<flatbuffers::Offset<tgx::ParameterShard>> shardOf(ResourceOp p) {
    auto shard = p->getAttrOfType<tg::ShardAttr>(tg::kShardAttr);
    if (!shard)
      return flatbuffers::Offset<tgx::ParameterShard>();
    FailureOr<uint32_t> axis = meshAxisOf(p, shard.getAxis());
    if (failed(axis))
      return failure();
    ArrayRef<int64_t> shape = shard.getFullShape().asArrayRef();
    std::vector<int64_t> full(shape.begin(), shape.end());
    return tgx::CreateParameterShardDirect(
        fbb, *axis, uint32_t(shard.getDim()), &full, shard.getPaddedSize(),
        uint32_t(shard.getBlocks()));
  }

  /// The ZeRO-1 chunking of a parameter's moments `m` and `v` (their
  /// tg.optimizer_shard, which they share), or none.
  FailureOr<flatbuffers::Offset<tgx::OptimizerShard>>
  optimizerShardOf(ResourceOp m, ResourceOp v) {
    auto attrOf = [](ResourceOp r) {
      return r ? r->getAttrOfType<tg::OptimizerShardAttr>(tg::kOptimizerShardAttr)
               : tg::OptimizerShardAttr();
    };
    tg::OptimizerShardAttr shard = attrOf(m);
    if (shard != attrOf(v))
      return (m ? m : v).emitOpError("and the other AdamW moment of its "
                                     "parameter are split differently (")
             << kOptimizerShardAttr << ")";
    if (!shard)
      return flatbuffers::Offset<tgx::OptimizerShard>();
    FailureOr<uint32_t> axis = meshAxisOf(m, shard.getAxis());
    if (failed(axis))
      return failure();
    return tgx::CreateOptimizerShard(fbb, *axis, shard.getChunk());
  }

  LogicalResult writeResources() {
    llvm::StringMap<unsigned> slotByName;
    llvm::StringMap<ResourceOp> stateByName;
    SmallVector<ResourceOp> params;
    for (auto r : program.getBlock().getOps<ResourceOp>()) {
      if (r.getKind() == ResourceKind::constant) {
        auto range = rangeOf(r);
        auto value = dyn_cast<DenseElementsAttr>(*r.getValue());
        if (failed(range) || !value)
          return r.emitOpError("needs an offset and a dense value");
        std::vector<uint8_t> bytes = constantBytes(value);
        constants.push_back(tgx::CreateConstantDirect(fbb, &*range, &bytes));
        continue;
      }
      // A pack's members are the slots (its bytes are theirs).
      if (!r.isState() || !exec::getPackMembers(r).empty())
        continue;
      auto range = rangeOf(r);
      auto dtype = dtypeOf(r, r.getType().getElementType());
      if (failed(range) || failed(dtype))
        return failure();
      std::string name = slotName(r);
      std::vector<int64_t> shape(r.getType().getShape().begin(),
                                 r.getType().getShape().end());
      slotByName[name] = slots.size();
      stateByName[name] = r;
      slots.push_back(
          tgx::CreateSlotDirect(fbb, name.c_str(), *dtype, &shape, &*range));
      if (r.getKind() == ResourceKind::parameter)
        params.push_back(r);
    }
    for (ResourceOp p : params) {
      auto init = initOf(p);
      if (failed(init))
        return failure();
      auto slotOf = [&](const std::string &name) {
        auto it = slotByName.find(name);
        return it == slotByName.end() ? ~0u : it->second;
      };
      std::string name = p.getName()->str();
      auto shard = shardOf(p);
      auto optimizerShard = optimizerShardOf(stateByName.lookup("adam_m:" + name),
                                             stateByName.lookup("adam_v:" + name));
      if (failed(shard) || failed(optimizerShard))
        return failure();
      auto copy = slotByName.find("compute:" + name);
      parameters.push_back(tgx::CreateParameterDirect(
          fbb, name.c_str(), init->first, init->second, slotByName[name],
          slotOf("adam_m:" + name), slotOf("adam_v:" + name), *shard,
          *optimizerShard,
          copy == slotByName.end() ? -1 : int32_t(copy->second)));
    }
    return success();
  }

  LogicalResult writeBinaries() {
    for (auto binary : module.getOps<exec::BinaryOp>()) {
      bool ptx = binary.getFormat() == exec::BinaryFormat::ptx;
      if (!modules.empty() && ptx != (target == tgx::Target_Cuda))
        return binary.emitOpError("mixes targets with the program's other "
                                  "kernel modules");
      target = ptx ? tgx::Target_Cuda : tgx::Target_Cpu;
      StringRef image = binary.getImage();
      std::vector<uint8_t> bytes(image.begin(), image.end());
      std::vector<flatbuffers::Offset<flatbuffers::String>> symbols;
      for (Attribute symbol : binary.getSymbols())
        symbols.push_back(fbb.CreateString(cast<StringAttr>(symbol).str()));
      std::vector<uint32_t> counts(binary.getOperandCounts().begin(),
                                   binary.getOperandCounts().end());
      // The byte size of each kernel operand, from the dispatches (every
      // dispatch of a kernel must pass the same sizes; the runtime checks
      // each Kernel command against them). Undispatched kernels: zeros.
      llvm::StringMap<std::vector<uint64_t>> bytesOf;
      // Every program's dispatches: the programs share the kernel modules.
      WalkResult walk = module.walk([&](exec::DispatchOp dispatch) {
        if (dispatch.getKernel().getRootReference().getValue() !=
            binary.getSymName())
          return WalkResult::advance();
        std::vector<uint64_t> sizes;
        for (Value v :
             llvm::concat<Value>(dispatch.getInputs(), dispatch.getOutputs()))
          sizes.push_back(
              uint64_t(exec::getByteSize(cast<MemRefType>(v.getType()))));
        auto [it, inserted] = bytesOf.try_emplace(
            dispatch.getKernel().getLeafReference().getValue(), sizes);
        if (!inserted && it->second != sizes) {
          dispatch.emitOpError("passes buffers of other sizes to its kernel "
                               "than an earlier dispatch of it");
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return failure();
      std::vector<std::vector<uint64_t>> kernelBytes(counts.size());
      for (auto [i, kernel] : llvm::enumerate(binary.getKernels())) {
        if (i >= counts.size())
          break;
        auto it = bytesOf.find(cast<StringAttr>(kernel).getValue());
        kernelBytes[i] = it == bytesOf.end()
                             ? std::vector<uint64_t>(counts[i], 0)
                             : it->second;
        if (kernelBytes[i].size() != counts[i])
          return binary.emitOpError("kernel ")
                 << kernel << " is dispatched with " << kernelBytes[i].size()
                 << " buffers but takes " << counts[i];
      }
      std::vector<uint64_t> operandBytes;
      for (const std::vector<uint64_t> &sizes : kernelBytes)
        operandBytes.insert(operandBytes.end(), sizes.begin(), sizes.end());
      // The checksum lets the runtime refuse a corrupted image before it
      // loads native code from it.
      ::tg::runtime::Fnv1a64 hash;
      hash.update(bytes.data(), bytes.size());
      unsigned moduleIndex = modules.size();
      std::vector<uint32_t> launchCounts(binary.getLaunchCounts().begin(),
                                         binary.getLaunchCounts().end());
      std::vector<flatbuffers::Offset<tgx::KernelLaunch>> launches;
      for (auto [j, function] : llvm::enumerate(binary.getLaunchSymbols()))
        launches.push_back(tgx::CreateKernelLaunchDirect(
            fbb, cast<StringAttr>(function).str().c_str(),
            uint32_t(binary.getLaunchGrid()[j]),
            uint32_t(binary.getLaunchBlock()[j]),
            uint32_t(binary.getLaunchSharedBytes()[j])));
      modules.push_back(tgx::CreateKernelModuleDirect(
          fbb, ptx ? tgx::ModuleFormat_Ptx : tgx::ModuleFormat_ElfSharedObject,
          &bytes, &symbols, &counts, hash.value(), &operandBytes,
          ptx ? &launchCounts : nullptr, ptx ? &launches : nullptr));
      for (auto [i, kernel] : llvm::enumerate(binary.getKernels()))
        kernelIndex[{binary.getSymName(), cast<StringAttr>(kernel).getValue()}] =
            {moduleIndex, unsigned(i)};
      targetCpu = binary.getTargetCpu().str();
    }
    return success();
  }

  LogicalResult writeCommands() {
    DenseMap<Value, unsigned> indexOf; // timepoint -> command index
    for (Operation &op : program.getBlock()) {
      if (!exec::isCommand(&op))
        continue;
      tgx::CommandKind kind = tgx::CommandKind_Kernel;
      unsigned moduleIndex = 0, kernel = 0;
      flatbuffers::Offset<tgx::Gemm> gemm = 0;
      flatbuffers::Offset<tgx::Collective> collective = 0;
      flatbuffers::Offset<tgx::Attention> attention = 0;
      SmallVector<Value> buffers;
      if (auto dispatch = dyn_cast<exec::DispatchOp>(op)) {
        auto it = kernelIndex.find(
            {dispatch.getKernel().getRootReference().getValue(),
             dispatch.getKernel().getLeafReference().getValue()});
        if (it == kernelIndex.end())
          return op.emitOpError("dispatches a kernel that is not compiled: "
                                "run the target's serialize pass");
        std::tie(moduleIndex, kernel) = it->second;
        buffers.append(dispatch.getInputs().begin(), dispatch.getInputs().end());
        buffers.append(dispatch.getOutputs().begin(),
                       dispatch.getOutputs().end());
      } else if (auto g = dyn_cast<exec::GemmOp>(op)) {
        kind = tgx::CommandKind_Gemm;
        auto dtype = dtypeOf(&op, g.getC().getType().getElementType());
        if (failed(dtype))
          return failure();
        gemm = tgx::CreateGemm(
            fbb, *dtype, g.getTransposeA(), g.getTransposeB(), g.getM(),
            g.getN(), g.getK(), g.getBatch(), g.getStrideA(), g.getStrideB(),
            g.getStrideC(), epilogueOf(g), g.getLda(), g.getLdb(), g.getLdc(),
            g.getInnerBatch(), g.getInnerStrideA(), g.getInnerStrideB(),
            g.getInnerStrideC(), activationOf(g.getActivation()));
        buffers = {g.getA(), g.getB(), g.getC()};
        if (g.getBias())
          buffers.push_back(g.getBias());
        if (g.getBiasGrad())
          buffers.push_back(g.getBiasGrad());
        if (g.getAddend())
          buffers.push_back(g.getAddend());
        if (g.getAux())
          buffers.push_back(g.getAux());
      } else if (auto a = dyn_cast<exec::AttentionOp>(op)) {
        // exec.attention's inputs then outputs are the command's operands
        // (tg/runtime/AttentionLayout.h).
        kind = tgx::CommandKind_Attention;
        std::vector<int64_t> strides(a.getStrides().begin(), a.getStrides().end());
        std::optional<std::vector<double>> frequencies;
        if (auto rope = a.getRopeFrequencies())
          frequencies.emplace(rope->begin(), rope->end());
        attention = tgx::CreateAttentionDirect(
            fbb, a.getGradient() ? tgx::AttentionPass_Gradient : tgx::AttentionPass_Forward,
            uint32_t(a.getBatch()), uint32_t(a.getQueryHeads()), uint32_t(a.getKeyHeads()),
            uint32_t(a.getQueryLen()), uint32_t(a.getKeyLen()), uint32_t(a.getHeadDim()),
            a.getCausal(), uint32_t(a.getWindow()), float(a.getScale().convertToDouble()),
            &strides, frequencies ? &*frequencies : nullptr,
            a.getCudnn() ? tgx::AttentionLibrary_Cudnn : tgx::AttentionLibrary_Runtime);
        buffers.append(a.getInputs().begin(), a.getInputs().end());
        buffers.append(a.getOutputs().begin(), a.getOutputs().end());
      } else if (auto copy = dyn_cast<exec::CopyOp>(op)) {
        kind = tgx::CommandKind_Copy;
        buffers = {copy.getSource(), copy.getTarget()};
      } else if (isa<exec::AllReduceOp, exec::ReduceScatterOp,
                     exec::AllGatherOp>(op)) {
        kind = tgx::CommandKind_Collective;
        auto written = writeCollective(op);
        if (failed(written))
          return failure();
        collective = *written;
        buffers = {op.getOperand(0), op.getOperand(1)}; // source, target
      } else {
        return op.emitOpError("cannot be stored in a .tgx yet: the format "
                              "has no point-to-point transfers (send/recv), "
                              "which pipeline parallelism will add");
      }
      std::vector<tgx::BufferRange> operands;
      for (Value buffer : buffers) {
        auto range = rangeOf(buffer);
        if (failed(range))
          return failure();
        operands.push_back(*range);
      }
      std::vector<uint32_t> awaits;
      for (Value t : exec::getAwaits(&op))
        awaits.push_back(indexOf.lookup(t));
      std::string label = labelOf(op);
      commands.push_back(tgx::CreateCommandDirect(
          fbb, kind, moduleIndex, kernel, gemm, &operands, label.c_str(),
          uint32_t(exec::getStream(&op)), &awaits, collective, attention));
      indexOf[op.getResult(0)] = commands.size() - 1;
    }
    return success();
  }

  /// The Collective table of an all_reduce, reduce_scatter or all_gather:
  /// its axis as an index into the program's mesh axes, its element type.
  FailureOr<flatbuffers::Offset<tgx::Collective>>
  writeCollective(Operation &op) {
    // The format ignores the reduction of an all-gather.
    tgx::CollectiveKind kind = tgx::CollectiveKind_AllGather;
    exec::Reduction reduction = exec::Reduction::sum;
    if (auto allReduce = dyn_cast<exec::AllReduceOp>(op)) {
      kind = tgx::CollectiveKind_AllReduce;
      reduction = allReduce.getReduction();
    } else if (auto reduceScatter = dyn_cast<exec::ReduceScatterOp>(op)) {
      kind = tgx::CollectiveKind_ReduceScatter;
      reduction = reduceScatter.getReduction();
    }
    StringRef axis = cast<StringAttr>(op.getAttr("axis")).getValue();
    auto axes = program.getMeshAxes().getAsValueRange<StringAttr>();
    auto found = llvm::find(axes, axis);
    if (found == axes.end())
      return op.emitOpError("runs over mesh axis '")
             << axis << "', which the program's mesh does not have";
    auto dtype = dtypeOf(
        &op, cast<MemRefType>(op.getOperand(0).getType()).getElementType());
    if (failed(dtype))
      return failure();
    return tgx::CreateCollective(fbb, kind, reductionOf(reduction),
                                 uint32_t(std::distance(axes.begin(), found)),
                                 *dtype);
  }

  static tgx::Reduction reductionOf(exec::Reduction reduction) {
    switch (reduction) {
    case exec::Reduction::sum:
      return tgx::Reduction_Sum;
    case exec::Reduction::avg:
      return tgx::Reduction_Avg;
    case exec::Reduction::max:
      return tgx::Reduction_Max;
    case exec::Reduction::min:
      return tgx::Reduction_Min;
    }
    llvm_unreachable("unknown reduction");
  }

  /// "<command> <name of the tg value it computes>", for profiles and errors.
  static std::string labelOf(Operation &op) {
    std::string label = op.getName().stripDialect().str();
    if (auto dispatch = dyn_cast<exec::DispatchOp>(op))
      label = dispatch.getKernel().getLeafReference().str();
    if (auto name = dyn_cast<NameLoc>(op.getLoc()))
      label += " " + name.getName().str();
    return label;
  }

  ModuleOp module;
  const ArtifactInfo &info;
  flatbuffers::FlatBufferBuilder fbb;
  exec::ProgramOp program;
  std::string targetCpu;
  tgx::Target target = tgx::Target_Cpu;
  std::map<std::pair<StringRef, StringRef>, std::pair<unsigned, unsigned>>
      kernelIndex;
  std::vector<flatbuffers::Offset<tgx::Slot>> slots;
  std::vector<flatbuffers::Offset<tgx::Parameter>> parameters;
  std::vector<flatbuffers::Offset<tgx::Constant>> constants;
  std::vector<flatbuffers::Offset<tgx::KernelModule>> modules;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<tgx::KernelModule>>>
      modulesVector;
  flatbuffers::Offset<flatbuffers::String> targetCpuString, producerString, modelJsonString;
  std::vector<flatbuffers::Offset<tgx::Command>> commands;
};

} // namespace

FailureOr<std::vector<uint8_t>> translateToTgx(ModuleOp module,
                                               const ArtifactInfo &info) {
  return TgxWriter(module, info).write();
}

bool writeExecutable(const std::string &tgrun,
                     const std::vector<uint8_t> &artifact,
                     const std::string &exeOut, std::string &error) {
  return ::tg::runtime::appendEmbeddedArtifact(tgrun, artifact, exeOut, error);
}

} // namespace mlir::tg
