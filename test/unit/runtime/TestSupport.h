// Support for the runtime tests. Artifacts are built with the FlatBuffers
// builder from a plain description that each test can alter first (the real
// compiler is not needed, and a corrupt variant is one field away).
#ifndef TG_TEST_RUNTIME_TESTSUPPORT_H
#define TG_TEST_RUNTIME_TESTSUPPORT_H

#include "tg/runtime/Artifact.h"
#include "tg/runtime/tg_runtime.h"
#include "tgx_generated.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tg::test {

struct Range {
  uint64_t offset = 0, size = 0;
};

struct SlotSpec {
  std::string name;
  tgx::DType dtype;
  std::vector<int64_t> shape;
  Range range;
};

/// A tgx::ParameterShard.
struct ShardSpec {
  uint32_t axis = 0, dim = 0;
  std::vector<int64_t> fullShape;
  int64_t paddedSize = 0;
  uint32_t blocks = 1;
};

/// A tgx::OptimizerShard.
struct OptimizerShardSpec {
  uint32_t axis = 0;
  int64_t chunk = 1;
};

struct ParameterSpec {
  std::string name;
  tgx::InitKind init;
  double initStd;
  uint32_t slot, adamM, adamV;
  std::optional<ShardSpec> shard; // none: replicated
  std::optional<OptimizerShardSpec> optimizerShard; // none: whole moments
  int32_t computeSlot = -1;                          // -1: no compute copy
};

struct MeshAxisSpec {
  std::string name;
  int64_t size;
};

struct ConstantSpec {
  Range range;
  std::vector<uint8_t> data;
};

struct ModuleSpec {
  tgx::ModuleFormat format = tgx::ModuleFormat_ElfSharedObject;
  std::vector<uint8_t> image;
  std::vector<std::string> kernels;
  std::vector<uint32_t> operandCounts;
  // kernel_operand_bytes, flattened; ProgramSpec::deriveOperandBytes fills
  // it from the commands.
  std::vector<uint64_t> operandBytes;
  bool writeOperandBytes = true;
  bool checksum = true; // write image_fnv1a64
};

struct GemmSpec {
  tgx::DType dtype = tgx::DType_F32;
  bool transposeA = false, transposeB = false;
  int64_t m = 1, n = 1, k = 1, batch = 1, strideA = 0, strideB = 0, strideC = 0;
  tgx::GemmEpilogue epilogue = tgx::GemmEpilogue_None;
  int64_t lda = 0, ldb = 0, ldc = 0, innerBatch = 0;
  int64_t innerStrideA = 0, innerStrideB = 0, innerStrideC = 0;
  tgx::GemmActivation activation = tgx::GemmActivation_None;
};

struct AttentionSpec {
  tgx::AttentionPass pass = tgx::AttentionPass_Forward;
  uint32_t batch = 1, queryHeads = 1, keyHeads = 1, queryLen = 64, keyLen = 64, headDim = 64;
  bool causal = true;
  uint32_t window = 0;
  float scale = 0.125f;
  std::vector<int64_t> strides; // 3 per bf16 operand
  std::vector<double> ropeFrequencies; // none: no rotary position embedding
  tgx::AttentionLibrary library = tgx::AttentionLibrary_Runtime;
};

struct CommandSpec {
  tgx::CommandKind kind;
  uint32_t module = 0, kernel = 0;
  bool hasGemm = false;
  GemmSpec gemm;
  bool hasCollective = false;
  tgx::CollectiveKind collective = tgx::CollectiveKind_AllReduce;
  tgx::Reduction reduction = tgx::Reduction_Sum;
  uint32_t axis = 0;
  tgx::DType collectiveDtype = tgx::DType_F32;
  bool hasAttention = false;
  AttentionSpec attention;
  std::vector<Range> operands;
  std::string label;
  uint32_t stream = 0;
  std::vector<uint32_t> awaits; // indices of earlier commands
};

struct ProgramSpec {
  uint32_t formatVersion = runtime::kFormatVersion;
  bool seal = true; // append the checksum trailer
  tgx::Target target = tgx::Target_Cpu;
  std::vector<MeshAxisSpec> mesh = {{"d", 1}}; // ranks row-major, the last axis fastest
  int64_t batchSize = 2, seqLen = 3, vocabSize = 5;
  uint64_t seed = 42;
  uint64_t arenaBytes = 0;
  std::vector<SlotSpec> slots;
  std::vector<ParameterSpec> parameters;
  std::vector<ConstantSpec> constants;
  std::vector<ModuleSpec> modules;
  std::vector<CommandSpec> commands;
  std::string name;                    // empty: none written
  std::vector<ProgramSpec> functions; // Program.functions

  /// Appends a slot at the next 64-byte aligned offset, growing the arena.
  uint32_t addSlot(const std::string &name, tgx::DType dtype, std::vector<int64_t> shape);
  /// Appends a parameter with its slot and AdamW moment slots.
  void addParameter(const std::string &name, std::vector<int64_t> shape, tgx::InitKind init,
                    double initStd = 0);
  /// Appends a parameter split by `shard` over its mesh axis (which must
  /// exist): slots of one rank's shape.
  void addShardedParameter(const std::string &name, const ShardSpec &shard,
                           tgx::InitKind init, double initStd = 0);
  /// Appends a parameter whose AdamW moments are chunked by `zero` (ZeRO-1):
  /// moment slots of [zero.chunk].
  void addChunkedParameter(const std::string &name, std::vector<int64_t> shape,
                           const OptimizerShardSpec &zero, tgx::InitKind init,
                           double initStd = 0);
  /// The slot called `name` (which must exist).
  const SlotSpec &slot(const std::string &name) const;
  /// step, tokens, targets, loss, grad_norm (F32) and lr (F64).
  void addInterfaceSlots();
  /// Sets each module's operandBytes to the operand sizes of the first
  /// Kernel command running each kernel (zeros for kernels never run).
  void deriveOperandBytes();
};

/// The serialized artifact, with its checksum trailer (runtime::sealArtifact,
/// as tgc writes it) unless `spec.seal` is false.
std::vector<uint8_t> build(const ProgramSpec &spec);

/// A fresh path in the test's scratch directory.
std::string scratchPath(const std::string &name);

/// The bytes of the fixture kernels' shared object; `resident`: the variant
/// linked with -z nodelete whose add_packed computes 2 (a + b).
std::vector<uint8_t> fixtureKernels(bool resident = false);

/// The fixture program: y = x @ W (Gemm), z = y + y (Kernel add_packed),
/// zc = z (Copy), then train_update (Kernel) computing loss, grad_norm, lr
/// and updating the state. Parameters "transformer.wte.weight" [5, 2]
/// (normal 0.02) and "transformer.ln_f.weight" [2] (ones); x is the
/// constant [2, 5] with x[i] = 0.5 * i.
ProgramSpec fixtureSpec();

/// The fixture with tensor-parallel parameters on the mesh tensor=`ranks`,
/// split over it when `sharded` (otherwise replicated: the program of the
/// same model for one device), each updated by a kernel every step:
///   parameters[2] "transformer.h.0.attn.c_attn.weight" [2, 6], split along
///     dim 1 in 3 blocks (q|k|v), normal 0.5, shard_update;
///   parameters[3] "transformer.h.0.mlp.c_fc.bias" [5], dim 0 padded to 6,
///     normal 1, shard_update;
///   parameters[4] "transformer.h.0.ln_1.weight" [4, 3], dim 0, ones,
///     shard_update;
///   parameters[5] "stamp" [2], dim 0, zeros, set to [1, 2] by
///     stamp_coordinate from the slot mesh_coordinate.
/// Every mesh computes the same full tensors.
ProgramSpec tensorParallelSpec(int64_t ranks, bool sharded);

/// The session for `spec` (null, with a test failure, if it does not load).
tg_session *loadSession(const ProgramSpec &spec);

/// The message of `status` ("" for success), which is freed.
std::string errorOf(tg_status status);

/// The bytes of a file (empty if it cannot be read), and writing them back.
std::vector<uint8_t> readFile(const std::string &path);
void writeFile(const std::string &path, const std::vector<uint8_t> &bytes);

} // namespace tg::test

/// Fails the test with the message if `call` returns an error status.
#define EXPECT_OK(call) EXPECT_EQ(::tg::test::errorOf(call), "")

#endif
