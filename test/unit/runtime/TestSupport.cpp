#include "TestSupport.h"

#include "tg/runtime/Hash.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace tg::test {
namespace {

std::size_t elementSize(tgx::DType dtype) {
  return dtype == tgx::DType_F64 || dtype == tgx::DType_I64 ? 8
         : dtype == tgx::DType_F32 || dtype == tgx::DType_I32 ? 4
                                                              : 2;
}

std::vector<uint8_t> readBytes(const char *path) {
  std::vector<uint8_t> bytes;
  std::FILE *f = std::fopen(path, "rb");
  if (!f) {
    std::fprintf(stderr, "cannot open the fixture kernels %s\n", path);
    std::abort();
  }
  uint8_t buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), f))
    bytes.insert(bytes.end(), buffer, buffer + n);
  std::fclose(f);
  return bytes;
}

} // namespace

uint32_t ProgramSpec::addSlot(const std::string &name, tgx::DType dtype,
                              std::vector<int64_t> shape) {
  uint64_t size = elementSize(dtype);
  for (int64_t d : shape)
    size *= uint64_t(d);
  uint64_t offset = (arenaBytes + 63) / 64 * 64;
  slots.push_back({name, dtype, std::move(shape), {offset, size}});
  arenaBytes = offset + size;
  return uint32_t(slots.size() - 1);
}

void ProgramSpec::addParameter(const std::string &name, std::vector<int64_t> shape,
                               tgx::InitKind init, double initStd) {
  uint32_t value = addSlot(name, tgx::DType_F32, shape);
  uint32_t m = addSlot("adam_m:" + name, tgx::DType_F32, shape);
  uint32_t v = addSlot("adam_v:" + name, tgx::DType_F32, shape);
  parameters.push_back({name, init, initStd, value, m, v});
}

void ProgramSpec::addShardedParameter(const std::string &name, const ShardSpec &shard,
                                      tgx::InitKind init, double initStd) {
  std::vector<int64_t> shape = shard.fullShape;
  shape[shard.dim] = shard.paddedSize / mesh.at(shard.axis).size;
  addParameter(name, shape, init, initStd);
  parameters.back().shard = shard;
}

void ProgramSpec::addChunkedParameter(const std::string &name, std::vector<int64_t> shape,
                                      const OptimizerShardSpec &zero, tgx::InitKind init,
                                      double initStd) {
  uint32_t value = addSlot(name, tgx::DType_F32, std::move(shape));
  uint32_t m = addSlot("adam_m:" + name, tgx::DType_F32, {zero.chunk});
  uint32_t v = addSlot("adam_v:" + name, tgx::DType_F32, {zero.chunk});
  parameters.push_back({name, init, initStd, value, m, v, std::nullopt, zero});
}

const SlotSpec &ProgramSpec::slot(const std::string &name) const {
  for (const SlotSpec &s : slots)
    if (s.name == name)
      return s;
  std::fprintf(stderr, "fixture has no slot %s\n", name.c_str());
  std::abort();
}

void ProgramSpec::addInterfaceSlots() {
  addSlot("step", tgx::DType_I32, {});
  addSlot("tokens", tgx::DType_I32, {batchSize, seqLen});
  addSlot("targets", tgx::DType_I32, {batchSize, seqLen});
  addSlot("loss", tgx::DType_F32, {});
  addSlot("grad_norm", tgx::DType_F32, {});
  addSlot("lr", tgx::DType_F64, {});
}

void ProgramSpec::deriveOperandBytes() {
  for (uint32_t i = 0; i < modules.size(); ++i) {
    ModuleSpec &m = modules[i];
    std::vector<std::vector<uint64_t>> sizes(m.operandCounts.size());
    for (const CommandSpec &c : commands)
      if (c.kind == tgx::CommandKind_Kernel && c.module == i && c.kernel < sizes.size() &&
          sizes[c.kernel].empty())
        for (const Range &r : c.operands)
          sizes[c.kernel].push_back(r.size);
    m.operandBytes.clear();
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      if (sizes[k].empty())
        sizes[k].assign(m.operandCounts[k], 0);
      m.operandBytes.insert(m.operandBytes.end(), sizes[k].begin(), sizes[k].end());
    }
  }
}

namespace {
flatbuffers::Offset<tgx::Program> writeProgram(flatbuffers::FlatBufferBuilder &b,
                                               const ProgramSpec &spec) {
  std::vector<flatbuffers::Offset<tgx::Program>> functions;
  for (const ProgramSpec &function : spec.functions)
    functions.push_back(writeProgram(b, function));
  auto range = [](const Range &r) { return tgx::BufferRange(r.offset, r.size); };

  std::vector<flatbuffers::Offset<tgx::Slot>> slots;
  for (const SlotSpec &s : spec.slots) {
    tgx::BufferRange r = range(s.range);
    slots.push_back(tgx::CreateSlot(b, b.CreateString(s.name), s.dtype, b.CreateVector(s.shape), &r));
  }
  std::vector<flatbuffers::Offset<tgx::Parameter>> parameters;
  for (const ParameterSpec &p : spec.parameters) {
    flatbuffers::Offset<tgx::ParameterShard> shard;
    if (p.shard)
      shard = tgx::CreateParameterShard(b, p.shard->axis, p.shard->dim,
                                        b.CreateVector(p.shard->fullShape), p.shard->paddedSize,
                                        p.shard->blocks);
    flatbuffers::Offset<tgx::OptimizerShard> optimizerShard;
    if (p.optimizerShard)
      optimizerShard =
          tgx::CreateOptimizerShard(b, p.optimizerShard->axis, p.optimizerShard->chunk);
    parameters.push_back(tgx::CreateParameter(b, b.CreateString(p.name), p.init, p.initStd,
                                              p.slot, p.adamM, p.adamV, shard, optimizerShard,
                                              p.computeSlot));
  }
  std::vector<flatbuffers::Offset<tgx::Constant>> constants;
  for (const ConstantSpec &c : spec.constants) {
    tgx::BufferRange r = range(c.range);
    constants.push_back(tgx::CreateConstant(b, &r, b.CreateVector(c.data)));
  }
  std::vector<flatbuffers::Offset<tgx::KernelModule>> modules;
  for (const ModuleSpec &m : spec.modules) {
    runtime::Fnv1a64 hash;
    hash.update(m.image.data(), m.image.size());
    modules.push_back(tgx::CreateKernelModule(
        b, m.format, b.CreateVector(m.image), b.CreateVectorOfStrings(m.kernels),
        b.CreateVector(m.operandCounts), m.checksum ? hash.value() : 0,
        m.writeOperandBytes ? b.CreateVector(m.operandBytes) : 0));
  }
  std::vector<flatbuffers::Offset<tgx::Command>> commands;
  for (const CommandSpec &c : spec.commands) {
    flatbuffers::Offset<tgx::Gemm> gemm;
    if (c.hasGemm) {
      const GemmSpec &g = c.gemm;
      gemm = tgx::CreateGemm(b, g.dtype, g.transposeA, g.transposeB, g.m, g.n, g.k, g.batch,
                             g.strideA, g.strideB, g.strideC, g.epilogue, g.lda, g.ldb,
                             g.ldc, g.innerBatch, g.innerStrideA, g.innerStrideB,
                             g.innerStrideC, g.activation);
    }
    std::vector<tgx::BufferRange> operands;
    for (const Range &r : c.operands)
      operands.push_back(range(r));
    flatbuffers::Offset<tgx::Collective> collective;
    if (c.hasCollective)
      collective = tgx::CreateCollective(b, c.collective, c.reduction, c.axis, c.collectiveDtype);
    flatbuffers::Offset<tgx::Attention> attention;
    if (c.hasAttention) {
      const AttentionSpec &a = c.attention;
      attention = tgx::CreateAttention(
          b, a.pass, a.batch, a.queryHeads, a.keyHeads, a.queryLen, a.keyLen, a.headDim, a.causal,
          a.window, a.scale, b.CreateVector(a.strides),
          a.ropeFrequencies.empty() ? 0 : b.CreateVector(a.ropeFrequencies), a.library);
    }
    commands.push_back(tgx::CreateCommand(b, c.kind, c.module, c.kernel, gemm,
                                          b.CreateVectorOfStructs(operands),
                                          c.label.empty() ? 0 : b.CreateString(c.label),
                                          c.stream, b.CreateVector(c.awaits), collective,
                                          attention));
  }
  std::vector<int64_t> meshShape;
  std::vector<std::string> meshAxes;
  for (const MeshAxisSpec &axis : spec.mesh) {
    meshShape.push_back(axis.size);
    meshAxes.push_back(axis.name);
  }
  auto mesh = tgx::CreateMesh(b, b.CreateVector(meshShape), b.CreateVectorOfStrings(meshAxes));
  auto train = tgx::CreateTrainInfo(b, spec.batchSize, spec.seqLen, spec.vocabSize, spec.seed,
                                    1e6);
  return tgx::CreateProgram(
      b, spec.formatVersion, spec.target, b.CreateString("x86-64"), b.CreateString("test"),
      b.CreateString("{}"), mesh, train, spec.arenaBytes, b.CreateVector(slots),
      b.CreateVector(parameters), b.CreateVector(constants), b.CreateVector(modules),
      b.CreateVector(commands), spec.name.empty() ? 0 : b.CreateString(spec.name),
      functions.empty() ? 0 : b.CreateVector(functions));
}
} // namespace

std::vector<uint8_t> build(const ProgramSpec &spec) {
  flatbuffers::FlatBufferBuilder b;
  tgx::FinishProgramBuffer(b, writeProgram(b, spec));
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  if (spec.seal)
    runtime::sealArtifact(bytes);
  return bytes;
}

tg_session *loadSession(const ProgramSpec &spec) {
  std::vector<uint8_t> bytes = build(spec);
  tg_session *session = nullptr;
  EXPECT_OK(tg_session_create_from_memory(bytes.data(), bytes.size(), "model.tgx", &session));
  return session;
}

std::string errorOf(tg_status status) {
  std::string message = status ? tg_status_message(status) : "";
  tg_status_free(status);
  return message;
}

std::string scratchPath(const std::string &name) {
  static int counter = 0;
  std::string path = ::testing::TempDir() + "tg-runtime-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter++) + "-" + name;
  std::remove(path.c_str());
  return path;
}

std::vector<uint8_t> fixtureKernels(bool resident) {
  return readBytes(resident ? TG_FIXTURE_KERNELS_RESIDENT : TG_FIXTURE_KERNELS);
}

ProgramSpec fixtureSpec() {
  ProgramSpec spec;
  spec.addInterfaceSlots();
  spec.addParameter("transformer.wte.weight", {5, 2}, tgx::InitKind_Normal, 0.02);
  spec.addParameter("transformer.ln_f.weight", {2}, tgx::InitKind_Ones);
  spec.addSlot("x", tgx::DType_F32, {2, 5});
  spec.addSlot("y", tgx::DType_F32, {2, 2});
  spec.addSlot("z", tgx::DType_F32, {2, 2});
  spec.addSlot("zc", tgx::DType_F32, {2, 2});

  std::vector<float> x(10);
  for (int i = 0; i < 10; ++i)
    x[i] = 0.5f * float(i);
  ConstantSpec constant{spec.slot("x").range, std::vector<uint8_t>(40)};
  std::memcpy(constant.data.data(), x.data(), 40);
  spec.constants.push_back(constant);

  spec.modules.push_back({tgx::ModuleFormat_ElfSharedObject, fixtureKernels(),
                          {"add_packed", "train_update"}, {3, 11}});

  auto r = [&](const char *name) { return spec.slot(name).range; };
  CommandSpec gemm{tgx::CommandKind_Gemm};
  gemm.hasGemm = true;
  gemm.gemm.m = 2;
  gemm.gemm.n = 2;
  gemm.gemm.k = 5;
  gemm.operands = {r("x"), r("transformer.wte.weight"), r("y")};
  gemm.label = "matmul";
  CommandSpec add{tgx::CommandKind_Kernel, 0, 0};
  add.operands = {r("y"), r("y"), r("z")};
  CommandSpec copy{tgx::CommandKind_Copy};
  copy.operands = {r("z"), r("zc")};
  CommandSpec update{tgx::CommandKind_Kernel, 0, 1};
  update.operands = {r("step"), r("tokens"), r("targets"), r("zc"),
                     r("transformer.wte.weight"), r("adam_m:transformer.wte.weight"),
                     r("adam_v:transformer.wte.weight"), r("transformer.ln_f.weight"),
                     r("loss"), r("grad_norm"), r("lr")};
  spec.commands = {gemm, add, copy, update};
  spec.deriveOperandBytes();
  return spec;
}

ProgramSpec tensorParallelSpec(int64_t ranks, bool sharded) {
  ProgramSpec spec = fixtureSpec();
  spec.mesh = {{"tensor", ranks}};
  Range coordinate = spec.slots[spec.addSlot(runtime::kMeshCoordinateSlot, tgx::DType_I64, {1})]
                         .range;
  struct Parameter {
    const char *name;
    ShardSpec shard;
    tgx::InitKind init;
    double initStd;
  };
  const Parameter parameters[] = {
      {"transformer.h.0.attn.c_attn.weight", {0, 1, {2, 6}, 6, 3}, tgx::InitKind_Normal, 0.5},
      {"transformer.h.0.mlp.c_fc.bias", {0, 0, {5}, 6, 1}, tgx::InitKind_Normal, 1.0},
      {"transformer.h.0.ln_1.weight", {0, 0, {4, 3}, 4, 1}, tgx::InitKind_Ones, 0},
      {"stamp", {0, 0, {2}, 2, 1}, tgx::InitKind_Zeros, 0}};
  for (const Parameter &p : parameters) {
    if (sharded)
      spec.addShardedParameter(p.name, p.shard, p.init, p.initStd);
    else
      spec.addParameter(p.name, p.shard.fullShape, p.init, p.initStd);
    ParameterSpec added = spec.parameters.back();
    // The kernels take the number of elements the rank holds as a constant.
    int64_t n = 1;
    for (int64_t d : spec.slots[added.slot].shape)
      n *= d;
    Range count = spec.slots[spec.addSlot(std::string("n:") + p.name, tgx::DType_I64, {})].range;
    ConstantSpec constant{count, std::vector<uint8_t>(sizeof(n))};
    std::memcpy(constant.data.data(), &n, sizeof(n));
    spec.constants.push_back(constant);
    ModuleSpec &module = spec.modules[0];
    CommandSpec command{tgx::CommandKind_Kernel, 0, uint32_t(module.kernels.size())};
    Range w = spec.slots[added.slot].range;
    if (std::string(p.name) == "stamp") {
      module.kernels.push_back("stamp_coordinate");
      command.operands = {count, coordinate, w};
    } else {
      module.kernels.push_back("shard_update");
      command.operands = {count, w, spec.slots[added.adamM].range, spec.slots[added.adamV].range};
    }
    module.operandCounts.push_back(uint32_t(command.operands.size()));
    command.label = module.kernels.back() + " " + p.name;
    spec.commands.push_back(command);
  }
  spec.deriveOperandBytes();
  return spec;
}

std::vector<uint8_t> readFile(const std::string &path) {
  std::vector<uint8_t> bytes;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return bytes;
  uint8_t buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), f))
    bytes.insert(bytes.end(), buffer, buffer + n);
  std::fclose(f);
  return bytes;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

} // namespace tg::test
