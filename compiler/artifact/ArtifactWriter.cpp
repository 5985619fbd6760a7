// Program + host kernels -> the .tgx FlatBuffers image.
#include "tg/Artifact/ArtifactWriter.h"

#include "tg/runtime/Artifact.h"
#include "tg/runtime/EmbeddedArtifact.h"
#include "tg/runtime/Hash.h"
#include "tgx_generated.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tg {
namespace tgx = ::tg::tgx;
namespace {

tgx::DType dtypeOf(Type type) {
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
  return tgx::DType_F32;
}

tgx::BufferRange rangeOf(const ArenaRange &range) {
  return tgx::BufferRange(range.offset, range.size);
}

/// "zeros" | "ones" | "normal:STD" (verified by the tg dialect).
std::pair<tgx::InitKind, double> initOf(StringRef rule) {
  if (rule == "ones")
    return {tgx::InitKind_Ones, 0.0};
  double std = 0;
  if (rule.consume_front("normal:") && !rule.getAsDouble(std))
    return {tgx::InitKind_Normal, std};
  return {tgx::InitKind_Zeros, 0.0};
}

} // namespace

std::vector<uint8_t> writeArtifact(const Program &program,
                                   const HostKernels &kernels,
                                   const ArtifactInfo &info) {
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  std::vector<flatbuffers::Offset<tgx::Slot>> slots;
  for (const ProgramSlot &slot : program.slots) {
    std::vector<int64_t> shape(slot.shape.begin(), slot.shape.end());
    tgx::BufferRange range = rangeOf(slot.range);
    slots.push_back(tgx::CreateSlotDirect(fbb, slot.name.c_str(),
                                          dtypeOf(slot.elementType), &shape,
                                          &range));
  }
  std::vector<flatbuffers::Offset<tgx::Parameter>> parameters;
  for (const ProgramParameter &p : program.parameters) {
    auto [kind, std] = initOf(p.init);
    parameters.push_back(tgx::CreateParameterDirect(
        fbb, p.name.c_str(), kind, std, p.slot, p.adamMSlot, p.adamVSlot));
  }
  std::vector<flatbuffers::Offset<tgx::Constant>> constants;
  for (const ProgramConstant &c : program.constants) {
    tgx::BufferRange range = rangeOf(c.range);
    constants.push_back(tgx::CreateConstantDirect(fbb, &range, &c.bytes));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols;
  for (const std::string &symbol : kernels.symbols)
    symbols.push_back(fbb.CreateString(symbol));
  // The checksum lets the runtime refuse a corrupted image before it loads
  // native code from it.
  ::tg::runtime::Fnv1a64 imageHash;
  imageHash.update(kernels.sharedObject.data(), kernels.sharedObject.size());
  std::vector<uint32_t> operandCounts(program.kernelOperandCounts.begin(),
                                      program.kernelOperandCounts.end());
  std::vector<flatbuffers::Offset<tgx::KernelModule>> modules = {
      tgx::CreateKernelModuleDirect(fbb, tgx::ModuleFormat_ElfSharedObject,
                                    &kernels.sharedObject, &symbols,
                                    &operandCounts, imageHash.value())};
  std::vector<flatbuffers::Offset<tgx::Command>> commands;
  for (const ProgramCommand &command : program.commands) {
    std::vector<tgx::BufferRange> operands;
    for (const ArenaRange &range : command.operands)
      operands.push_back(rangeOf(range));
    flatbuffers::Offset<tgx::Gemm> gemm = 0;
    tgx::CommandKind kind = tgx::CommandKind_Kernel;
    if (command.kind == ProgramCommand::Kind::Gemm) {
      const GemmCall &g = command.gemm;
      kind = tgx::CommandKind_Gemm;
      gemm = tgx::CreateGemm(fbb, dtypeOf(g.elementType), g.transposeA,
                             g.transposeB, g.m, g.n, g.k, g.batch, g.strideA,
                             g.strideB, g.strideC);
    } else if (command.kind == ProgramCommand::Kind::Copy) {
      kind = tgx::CommandKind_Copy;
    }
    commands.push_back(tgx::CreateCommandDirect(fbb, kind, 0, command.kernel,
                                                gemm, &operands,
                                                command.label.c_str()));
  }
  std::vector<int64_t> meshShape = {1};
  std::vector<flatbuffers::Offset<flatbuffers::String>> meshAxes = {
      fbb.CreateString("data")};
  auto mesh = tgx::CreateMeshDirect(fbb, &meshShape, &meshAxes);
  auto train = tgx::CreateTrainInfo(fbb, info.batchSize, info.seqLen,
                                    info.vocabSize, info.seed,
                                    info.flopsPerStep);
  auto root = tgx::CreateProgramDirect(
      fbb, ::tg::runtime::kFormatVersion, tgx::Target_Cpu, kernels.cpu.c_str(),
      info.producer.c_str(), info.modelJson.c_str(), mesh, train,
      program.arenaBytes, &slots, &parameters, &constants, &modules, &commands);
  tgx::FinishProgramBuffer(fbb, root);
  return std::vector<uint8_t>(fbb.GetBufferPointer(),
                              fbb.GetBufferPointer() + fbb.GetSize());
}

bool writeExecutable(const std::string &tgrun,
                     const std::vector<uint8_t> &artifact,
                     const std::string &exeOut, std::string &error) {
  return ::tg::runtime::appendEmbeddedArtifact(tgrun, artifact, exeOut, error);
}

} // namespace mlir::tg
