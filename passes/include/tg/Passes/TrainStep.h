#ifndef TG_PASSES_TRAINSTEP_H
#define TG_PASSES_TRAINSTEP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir {
class IRMapping;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace mlir::tg {

enum class LrSchedule { Constant, Cosine };

/// Everything the training step depends on besides the forward graph (what
/// TRAIN.json sets; frontend::TrainConfig holds one). The pass
/// tg-build-train-step has one option per field.
struct TrainStepOptions {
  int64_t batchSize = 0; // global, in sequences
  int64_t seqLen = 0;
  int64_t microBatches = 1;
  /// Ranks along the mesh axis "data": each gets batchSize / dataParallel
  /// rows of the batch, and the gradients and loss are averaged over them.
  int64_t dataParallel = 1;
  /// Ranks along the mesh axis "tensor" (tg-partition-tensor-parallel runs
  /// before the step is built when > 1).
  int64_t tensorParallel = 1;
  /// With tensorParallel > 1: activations between the tensor-parallel
  /// layers are split along the sequence over the same ranks.
  bool sequenceParallel = false;
  /// ZeRO stage, 0 or 1. Stage 1 (Megatron's distributed optimizer, needs
  /// dataParallel > 1) splits each parameter's AdamW moments over the
  /// "data" ranks: gradients are reduce-scattered instead of all-reduced,
  /// each rank updates its chunk of the parameter, and the chunks are
  /// all-gathered into the new parameter.
  int64_t zeroStage = 0;

  // AdamW, with torch.optim.AdamW semantics.
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;

  /// Global-norm clipping threshold; no clipping when absent.
  std::optional<double> gradClipNorm;

  LrSchedule schedule = LrSchedule::Constant;
  int64_t warmupSteps = 0;
  /// Cosine only: the final learning rate, reached `decaySteps` steps after
  /// the end of warm-up.
  double minLr = 0;
  int64_t decaySteps = 0;

  /// Rows of the batch one rank computes.
  int64_t rankBatchSize() const { return batchSize / dataParallel; }
  /// Rows of one micro-batch on one rank (the forward graph's batch).
  int64_t microBatchSize() const { return rankBatchSize() / microBatches; }
};

/// "constant" / "cosine".
StringRef stringifyLrSchedule(LrSchedule schedule);
std::optional<LrSchedule> parseLrSchedule(StringRef name);

/// Checks the options on their own (positive sizes, data-parallel ranks
/// dividing the batch and micro-batches the per-rank batch, finite rates,
/// betas in [0, 1), ...). The message names the option by its pass-option
/// name (e.g. "micro-batches").
LogicalResult verifyTrainStepOptions(const TrainStepOptions &options,
                                     function_ref<InFlightDiagnostic()> emitError);

/// The arguments of a forward graph (tokens, targets, params... -> loss,
/// logits) as the step builders read them.
struct ForwardSignature {
  unsigned tokens = 0, targets = 0; // tg.input "tokens" / "targets"
  SmallVector<unsigned> params;     // tg.param arguments, in order
  /// Other inputs, which every micro-batch shares ("mesh_coordinate").
  SmallVector<std::pair<unsigned, StringAttr>> sharedInputs;
  RankedTensorType loss; // the f32 or f64 scalar first result
};
/// Reads `forward`'s signature; an error names what is missing.
FailureOr<ForwardSignature> readForwardSignature(func::FuncOp forward);
/// Checks that `forward` computes one micro-batch of `options`: tokens of
/// microBatchSize() x seqLen.
LogicalResult checkForwardBatch(func::FuncOp forward,
                                const ForwardSignature &signature,
                                const TrainStepOptions &options);
/// A step over `dataParallel` ranks along "data": a mesh the module declares
/// must have that axis size; a module without one gets the mesh ["data"].
LogicalResult declareDataParallelMesh(func::FuncOp forward,
                                      int64_t dataParallel);
/// Clones `forward`'s body at `b` with its arguments mapped by `map` and
/// returns the clone of its result #`result`.
Value cloneForwardBody(OpBuilder &b, func::FuncOp forward, IRMapping &map,
                       unsigned result);

/// Adds `@eval_step` beside `forward`, which stays: the loss of the
/// parameters on a batch, without gradients or update,
///
///   eval_step(params..., tokens, targets, shared inputs...) -> loss
///
/// over the same rows as the training step's (`options` as for
/// buildTrainStep: the rank's rows in `options.microBatches` micro-batches,
/// losses averaged, and over "data" with data parallelism). Parameters and
/// the loss are in the loss's precision, as the training step's masters,
/// so a runtime can copy the training step's parameters into it.
LogicalResult buildEvalStep(func::FuncOp forward,
                            const TrainStepOptions &options);

/// Adds `@logits` beside `forward`, which stays: the forward's logits (its
/// second result) for one micro-batch of tokens, without the loss,
///
///   logits(params..., tokens) -> logits [rows, seq, vocab]
///
/// with parameters and logits in the loss's precision. Needs a forward on
/// one device (no mesh): the logits of a partitioned forward are split.
LogicalResult buildLogits(func::FuncOp forward);

/// Replaces `forward` (tokens, targets, params... -> loss, ...) in its module
/// by `@train_step`, the whole training step in tg:
///
///   train_step(params..., adam_m..., adam_v..., step, tokens, targets)
///       -> (params..., adam_m..., adam_v..., loss, grad_norm, lr)
///
/// Moment arguments carry tg.state = #tg.state<adam_m|adam_v, "NAME">, the
/// new parameters and moments tg.updates = #tg.state<param|adam_m|adam_v,
/// "NAME">, the scalars tg.output. The forward and backward run in one
/// `tg.micro_batches` op over `options.microBatches` slices of the rank's
/// rows of the batch (gradients cast to the master type inside it). With
/// `options.dataParallel` > 1 (a mesh the module declares must have a
/// "data" axis of that size; a module without one gets that mesh), tokens
/// and targets are the rank's batchSize / dataParallel
/// rows, and the loss and every gradient are averaged over the "data" axis
/// (tg.all_reduce avg) right after the loop, so every rank clips by the
/// global norm and applies the update a single-rank step over the whole
/// batch would. With `options.zeroStage` 1 each moment is the rank's
/// [chunk] of its parameter's local share, flattened and padded to chunk x
/// dataParallel (tg.optimizer_shard on the argument): every gradient goes
/// through tg.reduce_scatter avg instead, the rank updates its chunk (its
/// index along "data" read from a "mesh_coordinate" input, added when the
/// forward has none) and tg.all_gather reassembles the new parameter.
/// Global-norm clipping, AdamW as torch.optim.AdamW computes
/// it and the learning-rate schedule follow. Parameters, optimizer state and
/// the loss are in the loss's precision (f32, or f64 for an f64 graph); the forward and backward
/// run in the forward's element type (bf16 under `precision: bf16`).
LogicalResult buildTrainStep(func::FuncOp forward,
                             const TrainStepOptions &options);

/// Replaces every tg.micro_batches op under `root` by one clone of its body
/// per micro-batch (what tg-unroll-micro-batches does): tg.slice
/// "<operand>_mb<k>" of each sliced operand (none when count is 1), the
/// yielded values summed in micro-batch order with tg.add, then multiplied
/// by a 1/count constant (count > 1).
LogicalResult unrollMicroBatches(Operation *root);

/// tg-build-train-step (tg-build-eval-step) with its options set from
/// `options`.
std::unique_ptr<Pass>
createTgBuildTrainStepPass(const TrainStepOptions &options,
                           StringRef function = "forward");
std::unique_ptr<Pass>
createTgBuildEvalStepPass(const TrainStepOptions &options,
                          StringRef function = "forward");

} // namespace mlir::tg

#endif
