#ifndef TG_PIPELINE_PIPELINE_H
#define TG_PIPELINE_PIPELINE_H

#include "tg/Passes/TrainStep.h"
#include "tg/Targets/CudaTarget.h"

#include <cstdint>

namespace mlir {
class OpPassManager;
namespace tg {

/// tgc's pipeline, stage by stage. The frontend (config.json or .mlir to a
/// module with @forward or @train_step) runs before it; each stage is a list
/// of registered passes, so `tg-opt` can run any of them alone.

/// What the artifact holds besides @train_step.
struct EvaluationFunctions {
  /// @eval_step: the loss of a batch without an update (any mesh).
  bool evalStep = false;
  /// @logits: the forward's logits, for generation (one device only).
  bool logits = false;
};

/// @forward -> @train_step (tg-partition-tensor-parallel with tensor
/// parallelism, then tg-build-eval-step and tg-build-logits as `functions`
/// asks, then tg-build-train-step).
void buildTrainingStage(OpPassManager &pm, const TrainStepOptions &options,
                        EvaluationFunctions functions = {});

/// The fusion passes of the lowering stage, each on by default (`tgc
/// --no-fusion` turns all off, `--no-fuse=NAME` one of them).
struct FusionOptions {
  /// tg-fuse-elementwise: chains of elementwise ops in one kernel.
  bool elementwise = true;
  /// tg-fuse-into-rows: elementwise prologues and epilogues of norms,
  /// softmax and sums in their row kernels.
  bool rows = true;
  /// tg-fuse-into-rows' loss-with-gradient: cross_entropy and its gradient
  /// in one kernel (where the target's kernels may allocate).
  bool loss = true;
  /// exec-fuse-gemm-bias: bias adds as GEMM epilogues.
  bool gemmBias = true;
  /// exec-fuse-gemm-layouts: slices, transposes and concatenations around
  /// GEMMs as their strides.
  bool gemmLayouts = true;
  /// exec-fuse-gemm-activation: GELU and its gradient as GEMM epilogues
  /// (cuBLASLt's; off unless the target asks, since on the CPU the
  /// runtime's epilogue rounds otherwise than the generated kernel).
  bool gemmActivation = false;
  /// ... of f32 and f64 products too (the CPU runtime's epilogue; on CUDA
  /// only the 16-bit ones of mixed precision).
  bool gemmActivationWide = false;
  /// ... and the sums of GELU's gradient over the rows (a bias gradient)
  /// into the GEMM applying GELU's derivative (DGELU_BGRAD). Off unless
  /// asked (`--fuse=gemm-bias-grad`): on an H200 the GPT-2-medium step ran
  /// 9% slower with cuBLASLt's epilogue, and where cuBLASLt has no
  /// algorithm for it the step cannot load.
  bool gemmBiasGrad = false;
  /// exec-fuse-gemm-residual: the residual stream's add after a projection
  /// as the GEMM's addend (cuBLASLt's C with beta = 1).
  bool gemmResidual = true;
  /// tg-fuse-attention: flash attention where the cost model prefers it,
  /// and always where one score matrix would exceed `maxScoreMib`.
  bool attention = true;
  /// ... with the rotary position embedding of their queries and keys
  /// inside the flash kernels (tg-fuse-attention's `rope`).
  bool attentionRope = true;
  double maxScoreMib = 32;
  /// tg-fuse-attention-layouts: the flash kernels read and write the
  /// layouts around them in place.
  bool attentionLayouts = true;
  /// exec-fuse-horizontal: dispatches of one small kernel over like
  /// buffers (each parameter's cast, gradient square and AdamW update) in
  /// one launch over packs of those buffers.
  bool horizontal = true;
  /// exec-fuse-horizontal's large-rows: the layers' own per-parameter
  /// kernels packed too, where a trial plan keeps the arena; on for the
  /// CUDA target, whose every launch costs microseconds (the CPU's steps
  /// ran the same with them).
  bool horizontalLargeRows = false;
  /// tg-carry-compute-copies: each parameter's compute-precision copy is
  /// state the optimizer's kernel writes, not a cast at every step's start.
  bool computeCopies = true;
  /// Each fusion decision and its reason as a remark (`--fusion-remarks`).
  bool remarks = false;
};

struct LoweringOptions {
  /// Matrix products as library calls (exec.gemm), not generated kernels.
  bool libraryGemm = true;
  /// Initialisation seed recorded in the program.
  uint64_t seed = 0;
  FusionOptions fusion;
  /// Largest gradient bucket of data parallelism (exec-bucket-gradients).
  int64_t bucketBytes = 25 << 20;
  /// The target has flash attention kernels: generated ones (the CPU), or
  /// with `libraryAttention` the CUDA runtime's (exec.attention).
  bool flashKernels = true;
  /// A row of the kernels' row loops runs on one thread (the CPU; the CUDA
  /// target spreads a row's loops over a warp's lanes).
  bool vectorRows = true;
  /// Library GEMMs whose stored rows are not 16-byte aligned get padded
  /// operands (tg-align-gemm-rows): cuBLASLt needs it, OpenBLAS does not.
  bool alignGemmRows = false;
  /// Where the decomposed attention's gradient reuses its forward's
  /// probabilities (tg-decompose-attention; see DecomposeAttentionOptions).
  double keepProbsFactor = 4, keepProbsMib = 0;
  /// Blocks of queries of a decomposed causal attention (1: whole).
  int64_t causalBlocks = 2;
  /// Flash attention by the CUDA runtime's kernels (exec.attention).
  bool libraryAttention = false;
  /// With libraryAttention: by cuDNN's fused attention (tg-fuse-attention's
  /// cudnn).
  bool cudnnAttention = false;
  /// The GEMMs whose products only the optimizer reads on a stream of their
  /// own (exec-stream-weight-gradients).
  bool weightGradientStream = false;
};

/// @train_step (tg) -> exec.program with planned resources, timepoints and
/// a kernel module on memrefs: tg-carry-compute-copies (with fusion),
/// tg-unroll-micro-batches, tg-fuse-attention
/// (with fusion, where `flashKernels`: the target has them),
/// tg-decompose-attention, tg-align-gemm-rows (where `alignGemmRows` and
/// GEMMs are library calls), tg-form-dispatch-regions, tg-fuse-elementwise
/// and tg-fuse-into-rows (with fusion), tg-lower-to-exec,
/// exec-fuse-gemm-bias, exec-fuse-gemm-layouts and
/// exec-fuse-gemm-activation (with fusion),
/// exec-schedule-collectives,
/// exec-bucket-gradients, exec-insert-timepoints,
/// exec-stream-weight-gradients (with `weightGradientStream`),
/// exec-plan-buffers, tg-bufferize-kernels.
void buildLoweringStage(OpPassManager &pm, const LoweringOptions &options);

/// Kernel modules -> LLVM -> a host shared object in an exec.binary.
void buildCpuTargetStage(OpPassManager &pm);

/// Kernel modules -> GPU kernels with launch shapes -> NVVM -> PTX for
/// `options.chip` in an exec.binary.
void buildCudaTargetStage(OpPassManager &pm, const CudaTargetOptions &options);

} // namespace tg
} // namespace mlir

#endif
