// The verifier: the fixture passes; each kind of damage is rejected with a
// message naming the field; truncations and random byte flips never crash.
#include "TestSupport.h"
#include "tg/runtime/Artifact.h"
#include "tg/runtime/tg_runtime.h"

#include <gtest/gtest.h>

#include <cmath>

#include <functional>

using namespace tg;
using tg::test::ProgramSpec;

namespace {

/// The verifier's message for `spec` after `damage`, or "" if it verifies.
std::string verifyError(const std::function<void(ProgramSpec &)> &damage,
                        ProgramSpec spec = test::fixtureSpec()) {
  damage(spec);
  std::vector<uint8_t> bytes = test::build(spec);
  std::string error;
  bool ok = runtime::verifyArtifact(bytes.data(), bytes.size(), "model.tgx", error);
  EXPECT_EQ(ok, error.empty()) << error;
  return error;
}

void expectRejected(const std::function<void(ProgramSpec &)> &damage,
                    const std::string &expected, ProgramSpec spec = test::fixtureSpec()) {
  std::string error = verifyError(damage, std::move(spec));
  EXPECT_NE(error.find("model.tgx: "), std::string::npos) << error;
  EXPECT_NE(error.find(expected), std::string::npos) << error;
}

TEST(Artifact, FixtureVerifies) { EXPECT_EQ(verifyError([](ProgramSpec &) {}), ""); }

TEST(Artifact, RejectsWrongIdentifier) {
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  bytes[4] = 'X';
  std::string error;
  EXPECT_FALSE(runtime::verifyArtifact(bytes.data(), bytes.size(), "model.tgx", error));
  EXPECT_NE(error.find("model.tgx: not a .tgx artifact"), std::string::npos) << error;
}

/// `bytes` with its trailer recomputed (after a test changed the image).
std::vector<uint8_t> resealed(std::vector<uint8_t> bytes) {
  bytes.resize(bytes.size() - runtime::kTrailerSize);
  runtime::sealArtifact(bytes);
  return bytes;
}

std::string verifyBytes(const std::vector<uint8_t> &bytes) {
  std::string error;
  bool ok = runtime::verifyArtifact(bytes.data(), bytes.size(), "model.tgx", error);
  EXPECT_EQ(ok, error.empty()) << error;
  return error;
}

TEST(Artifact, RejectsUnsupportedVersion) {
  EXPECT_EQ(runtime::kFormatVersion, 6u);
  EXPECT_EQ(runtime::kOldestFormatVersion, 5u);
  expectRejected([](ProgramSpec &s) { s.formatVersion = 4; },
                 "format_version 4 is not supported by this runtime, which reads versions 5 "
                 "to 6; re-compile the model with the tgc that matches this runtime");
  expectRejected([](ProgramSpec &s) { s.formatVersion = 7; },
                 "format_version 7 is not supported by this runtime, which reads versions 5 "
                 "to 6");
  // A version 1 file (no checksum trailer, as tgc wrote them before) gets the
  // version message too, not a checksum complaint.
  expectRejected([](ProgramSpec &s) { s.formatVersion = 1; s.seal = false; },
                 "model.tgx: format_version 1 is not supported by this runtime, which reads "
                 "versions 5 to 6");
  expectRejected([](ProgramSpec &s) { s.formatVersion = 1; },
                 "format_version 1 is not supported by this runtime, which reads versions 5 to 6");
  // An unsealed artifact of a version it reads is truncated, not old.
  expectRejected([](ProgramSpec &s) { s.formatVersion = 5; s.seal = false; },
                 "the artifact is truncated");
}

// A version 5 artifact (before compute copies: Parameter.compute_slot
// absent) is a version 6 one without copies: it loads and runs.
TEST(Artifact, ReadsVersion5) {
  EXPECT_EQ(verifyError([](ProgramSpec &s) { s.formatVersion = 5; }), "");
}

// Issue 8: 76 of 1,511 mutated artifacts passed verification and trained to
// other losses (a changed constant, seed, stride...). The checksum trailer
// covers every byte, so each single-byte change is rejected.
TEST(Artifact, ChecksumTrailerCoversTheWholeFile) {
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  ASSERT_EQ(verifyBytes(bytes), "");
  EXPECT_EQ(std::string(bytes.end() - 16, bytes.end() - 8), "TGXSUM64");
  const std::string corrupt = "model.tgx: the artifact is corrupt (its contents do not match "
                              "the checksum in its trailer); re-compile the model with this tgc";
  // A constant's data (trains to other losses when changed), the seed, the
  // magic and the checksum itself.
  const auto *constant = tgx::GetProgram(bytes.data())->constants()->Get(0)->data();
  std::size_t constantAt = std::size_t(constant->data() - bytes.data()) + 5;
  for (std::size_t at : {constantAt, std::size_t(20), bytes.size() - 17, bytes.size() - 1}) {
    std::vector<uint8_t> mutant = bytes;
    mutant[at] ^= 0x01;
    EXPECT_EQ(verifyBytes(mutant), corrupt) << "byte " << at;
  }
  const std::string missing = "model.tgx: the artifact is truncated (its checksum trailer is "
                              "missing); re-compile the model with this tgc";
  std::vector<uint8_t> unsealed(bytes.begin(), bytes.end() - 16);
  EXPECT_EQ(verifyBytes(unsealed), missing);
  std::vector<uint8_t> badMagic = bytes;
  badMagic[bytes.size() - 12] ^= 0x01;
  EXPECT_EQ(verifyBytes(badMagic), missing);
}

TEST(Artifact, RejectsRangesOutsideTheArena) {
  expectRejected([](ProgramSpec &s) { s.arenaBytes -= 1; }, "lies outside the arena");
  expectRejected([](ProgramSpec &s) { s.commands[1].operands[2].offset = ~0ull - 8; },
                 "commands[1].operands[2]");
  expectRejected([](ProgramSpec &s) { s.constants[0].range.offset = s.arenaBytes; },
                 "constants[0].range");
}

TEST(Artifact, RejectsInconsistentSlotsAndParameters) {
  expectRejected([](ProgramSpec &s) { s.slots[6].range.size += 4; },
                 "slots[6] 'transformer.wte.weight' has a range of 44 bytes, but its shape "
                 "and dtype need 40");
  expectRejected([](ProgramSpec &s) { s.slots[7].shape = {2, 5}; },
                 "AdamW moment slots whose shape differs");
  expectRejected([](ProgramSpec &s) { s.parameters[0].adamV = 999; },
                 "parameters[0] 'transformer.wte.weight' refers to a slot index outside");
  expectRejected([](ProgramSpec &s) { s.constants[0].data.pop_back(); },
                 "constants[0] holds 39 bytes for a range of 40");
}

// A compute copy (format version 6): the bf16 or f16 slot of an f32
// parameter's shape that no other parameter uses.
TEST(Artifact, ChecksComputeCopies) {
  auto withCopy = [](tgx::DType dtype, std::vector<int64_t> shape) {
    return [=](ProgramSpec &s) {
      s.parameters[0].computeSlot =
          int32_t(s.addSlot("compute:transformer.wte.weight", dtype, shape));
    };
  };
  EXPECT_EQ(verifyError(withCopy(tgx::DType_BF16, {5, 2})), "");
  EXPECT_EQ(verifyError(withCopy(tgx::DType_F16, {5, 2})), "");
  expectRejected(withCopy(tgx::DType_F32, {5, 2}),
                 "parameters[0] 'transformer.wte.weight'.compute_slot is slot "
                 "'compute:transformer.wte.weight': a compute copy is bf16 or f16 of an f32 "
                 "parameter");
  expectRejected(withCopy(tgx::DType_BF16, {2, 5}),
                 "compute_slot is slot 'compute:transformer.wte.weight', whose shape differs "
                 "from the parameter's");
  expectRejected([](ProgramSpec &s) { s.parameters[0].computeSlot = 999; },
                 "compute_slot is 999, neither -1 (no copy) nor a slot index below");
  expectRejected([](ProgramSpec &s) { s.parameters[0].computeSlot = -2; },
                 "compute_slot is -2, neither -1");
  expectRejected(
      [](ProgramSpec &s) { s.parameters[0].computeSlot = int32_t(s.parameters[1].adamM); },
      "which parameter 'transformer.ln_f.weight' uses too");
}

TEST(Artifact, RejectsBadCommands) {
  expectRejected([](ProgramSpec &s) { s.commands[3].kernel = 2; },
                 "commands[3].kernel is 2 but module 0 has 2 kernels");
  expectRejected([](ProgramSpec &s) { s.commands[3].module = 1; }, "commands[3].module");
  expectRejected([](ProgramSpec &s) { s.commands[3].operands.pop_back(); },
                 "has 10 entries but kernel 'train_update' takes 11");
  expectRejected([](ProgramSpec &s) { s.commands[0].operands.pop_back(); },
                 "commands[0] ('matmul').operands has 2 entries instead of [a, b, c]");
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.k = 6; },
                 "commands[0] ('matmul').operands[0] (offset");
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.batch = 0; }, "m, n, k or batch 0");
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.batch = 2; },
                 "has c strides 0, 0 and ldc 2, so the batch's 2x2 outputs overlap");
  // Strided operands (format version 3): rows hold their columns, the
  // inner batch divides the batch and the last product stays in range.
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.ldc = 1; },
                 "gives operand 2 rows of 2 elements but leading dimension 1");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.batch = 3;
        s.commands[0].gemm.innerBatch = 2;
      },
      "gemm.inner_batch is 2, which does not divide batch 3");
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.lda = 1 << 20; },
                 "commands[0] ('matmul').operands[0] (offset");
  expectRejected([](ProgramSpec &s) { s.commands[0].hasGemm = false; },
                 "is a Gemm without its 'gemm' table");
  expectRejected(
      [](ProgramSpec &s) { s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Bias; },
      "commands[0] ('matmul').operands has 3 entries instead of [a, b, c, bias]");
  expectRejected(
      [](ProgramSpec &s) { s.commands[0].gemm.epilogue = tgx::GemmEpilogue(9); },
      "commands[0] ('matmul').gemm.epilogue has the unknown value 9");
  // Activations (format version 4): an aux operand after c, one packed
  // product.
  expectRejected(
      [](ProgramSpec &s) { s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanh; },
      "commands[0] ('matmul').operands has 3 entries instead of [a, b, c, aux]");
  expectRejected(
      [](ProgramSpec &s) { s.commands[0].gemm.activation = tgx::GemmActivation(3); },
      "commands[0] ('matmul').gemm.activation has the unknown value 3");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanh;
        s.commands[0].operands.push_back(s.commands[0].operands[2]);
      },
      "which overlap");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanhGrad;
        s.commands[0].gemm.batch = 2;
        s.commands[0].operands.push_back(s.commands[0].operands[0]);
      },
      "gemm.activation is GeluTanhGrad, which needs batch 1 and a packed c");
  // The bias gradient (BiasGrad): with GELU's derivative only, operand 3,
  // apart from c and aux.
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.epilogue = tgx::GemmEpilogue_BiasGrad; },
                 "commands[0] ('matmul').gemm.epilogue is BiasGrad, which needs the activation "
                 "GeluTanhGrad, not None");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_BiasGrad;
        s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanhGrad;
        s.commands[0].operands.push_back(s.commands[0].operands[0]);
      },
      "commands[0] ('matmul').operands has 4 entries instead of [a, b, c, bias_grad, aux]");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_BiasGrad;
        s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanhGrad;
        auto c = s.commands[0].operands[2];
        c.size = 2 * 4; // the first row of c: n f32 elements
        s.commands[0].operands.push_back(c);
        s.commands[0].operands.push_back(s.commands[0].operands[0]);
      },
      "and bias_grad");
  // The addend (Addend, BiasAddend: added within format version 6): m x n
  // packed after c and the bias, apart from c, and no activation.
  EXPECT_EQ(verifyError([](ProgramSpec &s) {
              s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Addend;
              s.commands[0].operands.push_back(s.commands[0].operands[0]);
            }),
            "");
  EXPECT_EQ(verifyError([](ProgramSpec &s) {
              s.commands[0].gemm.epilogue = tgx::GemmEpilogue_BiasAddend;
              auto bias = s.commands[0].operands[0];
              bias.size = 2 * 4; // n f32 elements
              s.commands[0].operands.push_back(bias);
              s.commands[0].operands.push_back(s.commands[0].operands[0]);
            }),
            "");
  expectRejected(
      [](ProgramSpec &s) { s.commands[0].gemm.epilogue = tgx::GemmEpilogue_BiasAddend; },
      "commands[0] ('matmul').operands has 3 entries instead of [a, b, c, bias, addend]");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Addend;
        s.commands[0].gemm.batch = 2;
        s.commands[0].gemm.strideA = s.commands[0].gemm.strideB = s.commands[0].gemm.strideC = 0;
        s.commands[0].operands.push_back(s.commands[0].operands[0]);
      },
      "commands[0] ('matmul').gemm.epilogue is Addend, which needs batch 1 and a packed c");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Addend;
        s.commands[0].operands.push_back(s.commands[0].operands[2]);
      },
      "and addend");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Addend;
        auto a = s.commands[0].operands[0];
        a.size = 4;
        s.commands[0].operands.push_back(a);
      },
      "commands[0] ('matmul').operands[3]");
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[0].gemm.epilogue = tgx::GemmEpilogue_Addend;
        s.commands[0].gemm.activation = tgx::GemmActivation_GeluTanh;
        s.commands[0].operands.push_back(s.commands[0].operands[0]);
        s.commands[0].operands.push_back(s.commands[0].operands[1]);
      },
      "commands[0] ('matmul').gemm.epilogue is Addend, which takes no activation, not GeluTanh");
  expectRejected([](ProgramSpec &s) { s.commands[0].gemm.dtype = tgx::DType_BF16; },
                 "commands[0] ('matmul').gemm.dtype is BF16, but the CPU target multiplies F32 "
                 "and F64 only");
  expectRejected([](ProgramSpec &s) { s.commands[2].operands[1].size = 8; },
                 "commands[2].operands is not [source, destination] of equal size");
  expectRejected([](ProgramSpec &s) { s.commands[2].kind = tgx::CommandKind(7); },
                 "commands[2].kind has the unknown value 7");
  // Awaited commands come earlier: the list order is a valid schedule.
  EXPECT_EQ(verifyError([](ProgramSpec &s) { s.commands[2].awaits = {0, 1}; }), "");
  expectRejected([](ProgramSpec &s) { s.commands[2].awaits = {0, 2}; },
                 "commands[2].awaits[1] is command 2, not an earlier one");
}

/// The fixture as a CUDA program of one flash attention forward over new
/// bf16 slots q, k, v, o [1, 1, 64, 64] (packed) and f32 lse [1, 1, 64].
void cudaAttention(ProgramSpec &s) {
  s.target = tgx::Target_Cuda;
  s.modules.clear();
  test::CommandSpec c{tgx::CommandKind_Attention};
  c.hasAttention = true;
  for (const char *name : {"q", "k", "v", "o"}) {
    s.addSlot(name, tgx::DType_BF16, {1, 1, 64, 64});
    c.operands.push_back(s.slot(name).range);
    c.attention.strides.insert(c.attention.strides.end(), {4096, 4096, 64});
  }
  s.addSlot("lse", tgx::DType_F32, {1, 1, 64});
  c.operands.push_back(s.slot("lse").range);
  c.label = "attention";
  s.commands = {c};
}

TEST(Artifact, ChecksAttention) {
  EXPECT_EQ(verifyError(cudaAttention), "");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.target = tgx::Target_Cpu;
      },
      "commands[0] ('attention').kind is Attention, which only the CUDA target runs");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.headDim = 96;
      },
      "commands[0] ('attention').attention.head_dim is 96, not 64 or 128");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.keyHeads = 3;
      },
      "commands[0] ('attention').attention has sizes the kernels cannot run");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.pass = tgx::AttentionPass_Gradient;
      },
      "commands[0] ('attention').operands has 5 ranges, not the 10 of an attention gradient");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.strides.pop_back();
      },
      "does not hold 3 strides for each of the 4 bf16 operands");
  // Rows 128 elements apart would read past the 8 KiB of k.
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.strides[5] = 128;
      },
      "commands[0] ('attention').operands[1] (offset");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.strides[2] = 60;
      },
      "at strides 4096, 4096, 60 (non-negative multiples of 8, the offset 16-byte aligned)");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].operands[4].size = 128;
      },
      "commands[0] ('attention').operands[4] (offset");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].hasAttention = false;
      },
      "is an Attention without its 'attention' table");
  // A rotary position embedding: one finite, non-negative frequency a pair.
  EXPECT_EQ(verifyError([](ProgramSpec &s) {
              cudaAttention(s);
              s.commands[0].attention.ropeFrequencies.assign(32, 0.5);
            }),
            "");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.ropeFrequencies.assign(64, 0.5);
      },
      "commands[0] ('attention').attention.rope_frequencies holds 64 values, not the 32 finite, "
      "non-negative frequencies");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.ropeFrequencies.assign(32, 0.5);
        s.commands[0].attention.ropeFrequencies[3] = std::nan("");
      },
      "attention.rope_frequencies holds 32 values, not the 32 finite, non-negative");
  // cuDNN's fused attention, or a library no runtime knows.
  EXPECT_EQ(verifyError([](ProgramSpec &s) {
              cudaAttention(s);
              s.commands[0].attention.library = tgx::AttentionLibrary_Cudnn;
            }),
            "");
  expectRejected(
      [](ProgramSpec &s) {
        cudaAttention(s);
        s.commands[0].attention.library = tgx::AttentionLibrary(7);
      },
      "commands[0] ('attention').attention.library has the unknown value 7");
}

/// Appends an all-reduce of slot `from` into slot `to` over the mesh's axis.
void addCollective(ProgramSpec &s, const std::string &from, const std::string &to) {
  test::CommandSpec c{tgx::CommandKind_Collective};
  c.hasCollective = true;
  c.operands = {s.slot(from).range, s.slot(to).range};
  c.label = "all_reduce grad";
  s.commands.push_back(c);
}

TEST(Artifact, ChecksCollectives) {
  auto twoRanks = [](ProgramSpec &s) { s.mesh = {{"d", 2}}; };
  EXPECT_EQ(verifyError([&](ProgramSpec &s) {
              twoRanks(s);
              addCollective(s, "y", "y"); // in place
              addCollective(s, "y", "z");
            }),
            "");
  expectRejected([](ProgramSpec &s) { addCollective(s, "y", "z"); },
                 "commands[4] ('all_reduce grad').collective.axis is mesh axis 'd' of size 1");
  expectRejected(
      [&](ProgramSpec &s) {
        twoRanks(s);
        addCollective(s, "y", "z");
        s.commands.back().axis = 1;
      },
      "collective.axis is 1, but the mesh has 1 axes");
  expectRejected(
      [&](ProgramSpec &s) {
        twoRanks(s);
        addCollective(s, "y", "z");
        s.commands.back().hasCollective = false;
      },
      "commands[4] ('all_reduce grad') is a Collective command without its collective");
  expectRejected(
      [&](ProgramSpec &s) {
        twoRanks(s);
        addCollective(s, "y", "z");
        s.commands.back().collective = tgx::CollectiveKind_AllGather;
      },
      "which a AllGather of F32 over 2 ranks cannot have");
  expectRejected(
      [&](ProgramSpec &s) {
        twoRanks(s);
        addCollective(s, "y", "z");
        s.commands.back().operands[1].offset = s.slot("y").range.offset + 4;
      },
      "has a source and a target that overlap");
  expectRejected(
      [&](ProgramSpec &s) {
        twoRanks(s);
        addCollective(s, "y", "z");
        s.commands.back().reduction = tgx::Reduction(9);
      },
      "has an unknown kind or reduction");
}

// On a "data" axis, the token slots hold one data rank's rows.
TEST(Artifact, TokenSlotsHoldADataRanksRows) {
  expectRejected(
      [](ProgramSpec &s) {
        s.mesh = {{"data", 2}};
      },
      "slot 'tokens' is not I32 of shape [batch_size / data ranks, seq_len]");
  expectRejected(
      [](ProgramSpec &s) {
        s.mesh = {{"data", 3}};
      },
      "train.batch_size is 2, which the mesh's 3 data ranks do not divide");
  EXPECT_EQ(verifyError([](ProgramSpec &s) {
              s.mesh = {{"data", 2}};
              s.batchSize = 4; // the slots stay 2 rows
            }),
            "");
}

// Tensor-parallel parameters: the slot holds one rank's part of the padded
// full tensor, as the shard describes it.
TEST(Artifact, ChecksParameterShards) {
  const ProgramSpec tp2 = test::tensorParallelSpec(2, true);
  EXPECT_EQ(verifyError([](ProgramSpec &) {}, tp2), "");
  EXPECT_EQ(verifyError([](ProgramSpec &) {}, test::tensorParallelSpec(1, true)), "");
  // parameters[2] "c_attn.weight": full [2, 6], dim 1 in 3 blocks, slots
  // [2, 3]; parameters[3] "c_fc.bias": full [5] padded to 6, slots [3].
  auto shard = [](ProgramSpec &s, int parameter) -> test::ShardSpec & {
    return *s.parameters[std::size_t(parameter)].shard;
  };
  const std::string cAttn = "model.tgx: parameters[2] 'transformer.h.0.attn.c_attn.weight'";
  const std::string cFc = "model.tgx: parameters[3] 'transformer.h.0.mlp.c_fc.bias'";
  expectRejected([&](ProgramSpec &s) { shard(s, 2).axis = 1; },
                 cAttn + ".shard.axis is 1, but the mesh has 1 axes", tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 2).dim = 2; },
                 cAttn + ".shard.dim is 2, but full_shape [2, 6] has 2 dimensions", tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 2).fullShape = {-2, 6}; },
                 cAttn + ".shard.full_shape has a negative or too large dimension -2", tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 2).fullShape = {1ll << 40, 1ll << 30}; },
                 cAttn + ".shard.full_shape has a negative or too large dimension 1073741824",
                 tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 2).blocks = 0; },
                 cAttn + ".shard.blocks is 0 (a shard has at least 1 block)", tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 3).paddedSize = 4; },
                 cFc + ".shard.padded_size is 4, less than full_shape[0] = 5", tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 2).paddedSize = 12; },
                 cAttn + ".shard.padded_size is 12, but a split into 3 blocks is not padded: "
                         "it must be full_shape[1] = 6",
                 tp2);
  expectRejected([&](ProgramSpec &s) { shard(s, 3).paddedSize = 7; },
                 cFc + ".shard.padded_size is 7, which 1 block split evenly over the 2 ranks "
                       "of mesh axis 'tensor' cannot divide",
                 tp2);
  expectRejected([&](ProgramSpec &s) { s.mesh = {{"tensor", 4}}; },
                 cAttn + ".shard.padded_size is 6, which 3 blocks split evenly over the 4 ranks "
                         "of mesh axis 'tensor' cannot divide",
                 tp2);
  expectRejected(
      [&](ProgramSpec &s) {
        shard(s, 3).fullShape = {8};
        shard(s, 3).paddedSize = 8;
      },
                 cFc + ".shard splits full_shape [8] over the 2 ranks of mesh axis 'tensor' "
                       "into slots of shape [4], but the parameter's slot has shape [3]",
                 tp2);
  // The moments are split like the parameter: same slot shape.
  expectRejected(
      [&](ProgramSpec &s) { s.slots[s.parameters[2].adamM].shape = {3, 2}; },
      cAttn + " has AdamW moment slots whose shape differs from the parameter's", tp2);
}

// ZeRO-1 moments: [chunk] slots whose chunks over the axis cover the
// parameter's elements.
TEST(Artifact, ChecksOptimizerShards) {
  ProgramSpec dp2 = test::fixtureSpec();
  dp2.mesh = {{"data", 2}};
  dp2.batchSize = 4; // the token slots hold one data rank's 2 rows
  // 5 elements, padded to 2 chunks of 3.
  dp2.addChunkedParameter("zero.bias", {5}, {0, 3}, tgx::InitKind_Zeros);
  EXPECT_EQ(verifyError([](ProgramSpec &) {}, dp2), "");
  auto zero = [](ProgramSpec &s) -> test::OptimizerShardSpec & {
    return *s.parameters.back().optimizerShard;
  };
  // Resizes both moment slots to `chunk` elements (their ranges too).
  auto chunkSlots = [](ProgramSpec &s, int64_t chunk) {
    for (uint32_t slot : {s.parameters.back().adamM, s.parameters.back().adamV}) {
      s.slots[slot].shape = {chunk};
      s.slots[slot].range.size = uint64_t(chunk) * 4;
    }
  };
  const std::string bias = "model.tgx: parameters[2] 'zero.bias'";
  expectRejected([&](ProgramSpec &s) { zero(s).axis = 1; },
                 bias + ".optimizer_shard.axis is 1, but the mesh has 1 axes", dp2);
  expectRejected(
      [&](ProgramSpec &s) {
        zero(s).chunk = 0;
        chunkSlots(s, 0);
      },
      bias + ".optimizer_shard.chunk is 0 (a chunk has at least 1 element)", dp2);
  expectRejected(
      [&](ProgramSpec &s) {
        zero(s).chunk = -3;
      },
      bias + ".optimizer_shard.chunk is -3 (a chunk has at least 1 element)", dp2);
  expectRejected(
      [&](ProgramSpec &s) {
        zero(s).chunk = 2;
        chunkSlots(s, 2);
      },
      bias + ".optimizer_shard.chunk is 2: its 2 chunks over mesh axis 'data' do not cover "
             "the parameter's 5 elements",
      dp2);
  expectRejected([&](ProgramSpec &s) { zero(s).chunk = 4; },
                 bias + ".optimizer_shard splits the AdamW moments into chunks of 4 elements, "
                        "but slot 'adam_m:zero.bias' has shape [3]",
                 dp2);
  expectRejected(
      [&](ProgramSpec &s) {
        s.slots[s.parameters.back().adamV].shape = {1, 3};
      },
      bias + ".optimizer_shard splits the AdamW moments into chunks of 3 elements, but slot "
             "'adam_v:zero.bias' has shape [1, 3]",
      dp2);
  // Chunked moments without the table are moments of the wrong shape.
  expectRejected([&](ProgramSpec &s) { s.parameters.back().optimizerShard.reset(); },
                 bias + " has AdamW moment slots whose shape differs from the parameter's", dp2);
}

TEST(Artifact, ChecksTheMeshCoordinateSlot) {
  const ProgramSpec tp2 = test::tensorParallelSpec(2, true);
  auto coordinate = [](ProgramSpec &s) -> test::SlotSpec & {
    for (test::SlotSpec &slot : s.slots)
      if (slot.name == "mesh_coordinate")
        return slot;
    std::abort();
  };
  expectRejected(
      [&](ProgramSpec &s) {
        coordinate(s).dtype = tgx::DType_I32;
        coordinate(s).range.size = 4;
      },
      "model.tgx: slot 'mesh_coordinate' is I32 of shape [1], not I64 of shape [1] (one index "
      "per mesh axis)",
      tp2);
  expectRejected(
      [&](ProgramSpec &s) {
        s.mesh = {{"data", 1}, {"tensor", 2}};
        for (test::ParameterSpec &p : s.parameters)
          if (p.shard)
            p.shard->axis = 1;
      },
      "slot 'mesh_coordinate' is I64 of shape [1], not I64 of shape [2]", tp2);
}

// Issue 8: one changed byte (a kernel command pointing at another kernel
// that takes as many buffers) crashed inside the kernel. Each operand's size
// is checked against kernel_operand_bytes.
TEST(Artifact, RejectsKernelOperandsOfTheWrongSize) {
  expectRejected(
      [](ProgramSpec &s) {
        s.commands[1].label = "add_packed z";
        s.commands[1].operands[2] = s.slot("x").range;
      },
      "model.tgx: commands[1] ('add_packed z').operands[2] (offset " +
          std::to_string(test::fixtureSpec().slot("x").range.offset) +
          ", size 40) has 40 bytes but kernel 'add_packed' takes 16 bytes there; the artifact "
          "is corrupt or was written by a different tgc, re-compile the model with this tgc");
  // The reproducer: a second kernel with as many operands, of other sizes.
  expectRejected(
      [](ProgramSpec &s) {
        s.modules[0].kernels.push_back("add_packed");
        s.modules[0].operandCounts.push_back(3);
        for (int i = 0; i < 3; ++i)
          s.modules[0].operandBytes.push_back(8);
        s.commands[1].kernel = 2;
      },
      "commands[1].operands[0] (offset ");
  expectRejected([](ProgramSpec &s) { s.modules[0].writeOperandBytes = false; },
                 "model.tgx: modules[0] has no kernel_operand_bytes");
  expectRejected([](ProgramSpec &s) { s.modules[0].operandBytes.pop_back(); },
                 "model.tgx: modules[0].kernel_operand_bytes has 13 entries, but "
                 "kernel_operand_counts add up to 14");
}

TEST(Artifact, RejectsMissingOrMistypedInterfaceSlots) {
  expectRejected([](ProgramSpec &s) { s.slots[4].name = "gradnorm"; },
                 "slots has no 'grad_norm' slot");
  expectRejected([](ProgramSpec &s) { s.slots[0].dtype = tgx::DType_I64; s.slots[0].range.size = 8; },
                 "slot 'step' is not an I32 scalar");
  expectRejected([](ProgramSpec &s) { s.batchSize = 4; },
                 "slot 'tokens' is not I32 of shape [batch_size / data ranks, seq_len]");
}

// Functions beside the training step (eval_step, logits) are programs of
// their own, checked as such and against the training step, whose
// parameters the runtime copies into them.
TEST(Artifact, ChecksFunctionsAgainstTheTrainingStep) {
  auto withFunction = [](const std::string &name) {
    ProgramSpec spec = test::fixtureSpec();
    ProgramSpec function = test::fixtureSpec();
    function.name = name;
    spec.functions.push_back(function);
    return spec;
  };
  EXPECT_EQ(verifyError([](ProgramSpec &) {}, withFunction("eval_step")), "");
  expectRejected([](ProgramSpec &s) { s.functions[0].name = "decode"; },
                 "functions[0] 'decode'.name is 'decode', not a function this runtime runs",
                 withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions.push_back(s.functions[0]); },
                 "functions[1].name is 'eval_step', which another function has",
                 withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].parameters[0].name = "other"; },
                 "functions[0] 'eval_step'.parameters[0] is not the training step's parameter",
                 withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].parameters.pop_back(); },
                 "functions[0] 'eval_step'.parameters has", withFunction("eval_step"));
  // A function's compute copy would never be written: functions cast.
  expectRejected(
      [](ProgramSpec &s) {
        ProgramSpec &f = s.functions[0];
        f.parameters[0].computeSlot =
            int32_t(f.addSlot("compute:transformer.wte.weight", tgx::DType_BF16, {5, 2}));
      },
      "functions[0] 'eval_step'.parameters[0].compute_slot is", withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].mesh = {{"e", 1}}; },
                 "functions[0] 'eval_step'.mesh is e=1, not the training step's d=1",
                 withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].target = tgx::Target_Cuda; },
                 "functions[0] 'eval_step'.modules[0].format is ElfSharedObject in a program for "
                 "the target Cuda", withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].functions.push_back(s.functions[0]); },
                 "only the training step has functions", withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].slots[3].name = "lost"; },
                 "functions[0] 'eval_step'.slots has no 'loss' slot", withFunction("eval_step"));
  // A function is verified as a whole program: a range outside its arena.
  expectRejected([](ProgramSpec &s) { s.functions[0].slots[1].range.offset = 1 << 30; },
                 "functions[0] 'eval_step'.slots[1] 'tokens'.range", withFunction("eval_step"));
  expectRejected([](ProgramSpec &) {}, "functions[0] 'logits'.slot 'logits' is missing",
                 withFunction("logits"));
  // The runtime checks a function's tokens against the training step's
  // shape: the sizes must agree.
  expectRejected([](ProgramSpec &s) { s.functions[0].seqLen = 4; },
                 "functions[0] 'eval_step'.train has seq_len 4 and vocab_size 5, the training "
                 "step 3 and 5",
                 withFunction("eval_step"));
  expectRejected([](ProgramSpec &s) { s.functions[0].batchSize = 1; },
                 "functions[0] 'eval_step'.train.batch_size differs", withFunction("eval_step"));
  // A logits function with a mesh_coordinate slot too small for the
  // runtime's write.
  ProgramSpec logits = withFunction("logits");
  logits.functions[0].addSlot("logits", tgx::DType_F32, {2, 3, 5});
  EXPECT_EQ(verifyError([](ProgramSpec &) {}, logits), "");
  expectRejected([](ProgramSpec &s) { s.functions[0].addSlot("mesh_coordinate", tgx::DType_I32, {}); },
                 "functions[0] 'logits'.slot 'mesh_coordinate' is I32 of shape []", logits);
  expectRejected([](ProgramSpec &s) { s.functions[0].batchSize = 4; },
                 "functions[0] 'logits'.train.batch_size exceeds", logits);
}

TEST(Artifact, RejectsCorruptKernelImages) {
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  const auto *image = tgx::GetProgram(bytes.data())->modules()->Get(0)->image();
  bytes[image->data() - bytes.data() + image->size() / 2] ^= 0x10;
  bytes = resealed(bytes); // past the whole-file checksum
  std::string error;
  EXPECT_FALSE(runtime::verifyArtifact(bytes.data(), bytes.size(), "model.tgx", error));
  EXPECT_NE(error.find("model.tgx: modules[0].image does not match its checksum"),
            std::string::npos)
      << error;
}

TEST(Artifact, RejectsModulesWithoutChecksumOrOperandCounts) {
  expectRejected([](ProgramSpec &s) { s.modules[0].checksum = false; },
                 "modules[0].image has no checksum (image_fnv1a64)");
  expectRejected([](ProgramSpec &s) { s.modules[0].operandCounts.pop_back(); },
                 "modules[0].kernel_operand_counts has 1 entries for 2 kernels");
}

TEST(Artifact, RejectsEveryTruncation) {
  std::vector<uint8_t> bytes = test::build(test::fixtureSpec());
  for (std::size_t size = 0; size < bytes.size(); size += 1 + size / 64) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
    std::string error;
    EXPECT_FALSE(runtime::verifyArtifact(prefix.data(), prefix.size(), "model.tgx", error))
        << "verified at " << size << " of " << bytes.size() << " bytes";
    EXPECT_EQ(error.rfind("model.tgx: ", 0), 0u) << error;
  }
}

// Any changed byte is caught by the checksum trailer.
TEST(Artifact, RandomByteFlipsAreRejected) {
  std::vector<uint8_t> original = test::build(test::fixtureSpec());
  uint64_t state = 99;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::vector<uint8_t> bytes = original;
    bytes[(state >> 33) % bytes.size()] ^= uint8_t(1 + (state >> 20) % 255);
    std::string error = verifyBytes(bytes);
    EXPECT_EQ(error.rfind("model.tgx: ", 0), 0u) << error;
  }
}

// Flips one byte at a time, anywhere, then recomputes the checksum trailer
// (as a buggy or hostile writer would): the kernel image too, since its
// checksum catches that. Each mutant must either be rejected with a message
// or load and train without crashing.
TEST(Artifact, ResealedByteFlipsNeverCrash) {
  std::vector<uint8_t> original = test::build(test::fixtureSpec());
  uint64_t state = 12345;
  auto next = [&] { // LCG: reproducible across runs
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int rejected = 0, ran = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::vector<uint8_t> bytes = original;
    bytes[next() % (bytes.size() - runtime::kTrailerSize)] ^= uint8_t(1 + next() % 255);
    bytes = resealed(bytes);
    tg_session *session = nullptr;
    if (tg_status status =
            tg_session_create_from_memory(bytes.data(), bytes.size(), "mutant.tgx", &session)) {
      EXPECT_EQ(std::string(tg_status_message(status)).rfind("mutant.tgx", 0), 0u)
          << tg_status_message(status);
      tg_status_free(status);
      ++rejected;
      continue;
    }
    int32_t tokens[6] = {0, 1, 2, 3, 4, 0}, targets[6] = {1, 2, 3, 4, 0, 1};
    tg_status_free(tg_session_init_random(session, 1));
    tg_status_free(tg_session_step(session, tokens, targets, nullptr));
    tg_session_destroy(session);
    ++ran;
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(ran, 0);
}

// Found by fuzzing (test/fuzz/corpus/artifact): FlatBuffers' verifier
// accepts a vector of 8-byte values 4 bytes off alignment, and reading it is
// undefined behaviour; the artifact verifier rejects it first.
TEST(Artifact, RejectsMisalignedEightByteVectors) {
  std::vector<uint8_t> bytes =
      test::readFile(TG_FUZZ_CORPUS "/artifact/misaligned-int64-vector.tgx");
  ASSERT_FALSE(bytes.empty());
  std::string error;
  EXPECT_FALSE(runtime::verifyArtifact(bytes.data(), bytes.size(), "model.tgx", error));
  EXPECT_NE(error.find("holds 8-byte values that are not 8-byte aligned"), std::string::npos)
      << error;
}

} // namespace
