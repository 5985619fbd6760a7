// The compiler as a library: a model description and training options in,
// a compiled module or the .tgx artifact out. `tgc compile` and the
// compiler's C API (tgc_compiler.h) are two front doors to it.
#ifndef TG_DRIVER_DRIVER_H
#define TG_DRIVER_DRIVER_H

#include "tg/Frontend/ModelConfig.h"
#include "tg/Frontend/TrainConfig.h"
#include "tg/Pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace tg::driver {

/// The ranks along each axis of a mesh: dp (mesh axis "data") and tp
/// ("tensor").
struct MeshSpec {
  int64_t dp = 1, tp = 1;
};
/// "dp=D[,tp=T]" (either order, each axis at most once, sizes >= 1).
llvm::Expected<MeshSpec> parseMesh(llvm::StringRef text);

enum class Precision { FromConfig, F32, Bf16, F64 };
enum class Target { Cpu, Cuda };

/// One compilation's inputs and choices: what tgc's flags and the C API's
/// options set.
struct Options {
  /// The model description: a Hugging Face config.json, or tg text when it
  /// ends in ".mlir". Names it in messages.
  std::string modelPath;
  /// Its contents, held in memory; without them the file is read.
  std::optional<std::string> modelText;
  /// TRAIN.json (empty: no training step), and its contents in memory.
  std::string trainPath;
  std::optional<std::string> trainText;
  std::optional<MeshSpec> mesh;
  bool sequenceParallel = false;
  int64_t zero = 0;
  Precision precision = Precision::FromConfig;
  /// The forward graph's batch and sequence without a training step (seq 0:
  /// the model's maximum).
  int64_t batch = 1, seq = 0;
  Target target = Target::Cpu;
  std::string cudaArch = "sm_90a";
  /// The SMs the GPU kernels' grids are sized for; 0: the full part of
  /// cudaArch (132 for sm_90a).
  int64_t cudaSmCount = 0;
  /// 16-bit exp, tanh and division through the fast f32 approximations
  /// (tg-cuda-approximate-half-math); false: libdevice's exact routines.
  bool cudaApproximateHalfMath = true;
  /// Attention (bf16, head dim 64 or 128) fused (exec.attention) instead of
  /// decomposed: the runtime's flash kernels made the GPT-2-medium step 1.25x
  /// faster on an H100 (docs/perf.md).
  bool cudaFlashAttention = true;
  /// With cudaFlashAttention: by cuDNN's fused attention (a rotation stays
  /// outside), the runtime's flash kernels where cuDNN is missing or refuses
  /// a graph at load. The default: the GPT-2-medium step 1.21x faster than
  /// with the runtime's kernels on an H200 (docs/perf.md).
  bool cudaCudnnAttention = true;
  /// Registers a thread of a CUDA row kernel may use at most (0: what its
  /// block allows): more resident blocks, at the risk of spills.
  int64_t cudaRowRegisters = 0;
  /// A GPU thread adds its share of a float64 sum in float32 where the share
  /// is at most this many terms (0: float64 throughout).
  int64_t cudaF32PartialTerms = 256;
  /// The fewest rows of a GPU thread's share of a split column sum.
  int64_t cudaColumnShare = 32;
  /// A split column sum's partials combined by the last block of each row
  /// group to store them, not by a second launch.
  bool cudaLastBlockCombines = false;
  /// A norm gradient's row pass and its column sums in one GPU launch.
  bool cudaColumnSumsInRowPass = false;
  /// The weight gradients' GEMMs on a stream of their own, beside the
  /// backward pass (exec-stream-weight-gradients).
  bool cudaWeightGradientStream = false;
  bool libraryGemm = true;
  /// Pad library GEMMs to 16-byte aligned rows (tg-align-gemm-rows); unset:
  /// the target's need (CUDA yes, the CPU no).
  std::optional<bool> alignGemmRows;
  /// GELU and its gradient as GEMM epilogues (exec-fuse-gemm-activation);
  /// unset: the target's choice (CUDA yes, the CPU no).
  std::optional<bool> gemmActivation;
  /// The flash kernels rotate their queries and keys themselves
  /// (tg-fuse-attention's rope); unset: the target's choice (the CPU yes;
  /// CUDA no: its runtime's kernels rotate each tile once per block that
  /// loads it, 2.2x slower forward at head dim 128 on an H200).
  std::optional<bool> attentionRope;
  FusionOptions fusion;
  double bucketMb = 25;
  /// One device's memory in GB (10^9 bytes): --stats checks the plan
  /// against it, and on CUDA a tenth of it bounds the attention
  /// probabilities kept for the gradient.
  double deviceMemoryGB = 80;
  /// Query blocks of a decomposed causal attention (tg-decompose-attention).
  int64_t causalBlocks = 2;
};

/// A fusion pass a user may switch (tgc --no-fuse / --fuse, the C API's
/// no_fuse): its name there and what it fuses.
struct FusionSwitch {
  llvm::StringLiteral name, description;
};
/// Every switchable fusion pass, in the order tgc lists them.
llvm::ArrayRef<FusionSwitch> fusionSwitches();
/// Turns fusion pass `name` (one of fusionSwitches()) on or off in
/// `options`. On, gemm-activation overrides the target's choice; the others
/// are on unless turned off. An unknown name is an error listing the names.
llvm::Error setFusion(Options &options, llvm::StringRef name, bool on);
/// Turns every fusion pass off (tgc --no-fusion).
void disableFusion(Options &options);

/// What the driver knows about the model it compiles.
struct Compilation {
  OwningOpRef<ModuleOp> module;
  std::optional<frontend::ModelConfig> model;
  std::optional<frontend::TrainConfig> train;
  int64_t batch = 0, seqLen = 0;
};

/// Reads the model (and TRAIN.json) and builds @forward, or parses the tg
/// text, after checking that the options fit together. The frontend's
/// warnings (unknown config keys) go to `warn`. Errors name the file, field
/// or option.
llvm::Error load(MLIRContext &ctx, const Options &options, Compilation &c,
                 llvm::function_ref<void(const std::string &)> warn);

/// How far buildPipeline goes.
enum class Stage {
  Training, // @train_step in tg
  Lowering, // planned exec.programs, kernels on memrefs
  Kernels,  // kernels compiled for the target (what an artifact needs)
};
/// Adds tgc's pipeline for `c` up to `stage`. `artifact`: the evaluation
/// functions (@eval_step, and @logits on one device) are built as well.
llvm::Error buildPipeline(OpPassManager &pm, const Options &options,
                          const Compilation &c, Stage stage, bool artifact);

/// The artifact of `options`' training step: load, the whole pipeline,
/// verification and translation. Diagnostics of passes go to `ctx`'s
/// handler; other errors are returned.
llvm::Expected<std::vector<uint8_t>>
compileArtifact(MLIRContext &ctx, const Options &options,
                llvm::function_ref<void(const std::string &)> warn);

/// The .tgx artifact of a module the whole pipeline has run on, recording
/// `options`' model description.
llvm::Expected<std::vector<uint8_t>> translate(ModuleOp module, const Options &options);

/// The dialects a compilation needs.
void registerDialects(DialectRegistry &registry);

} // namespace tg::driver
} // namespace mlir

#endif
