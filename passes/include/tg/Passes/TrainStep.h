#ifndef TG_PASSES_TRAINSTEP_H
#define TG_PASSES_TRAINSTEP_H

#include "tg/Frontend/TrainConfig.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::func {
class FuncOp;
}

namespace mlir::tg {

/// Replaces `forward` (tokens, targets, params... -> loss, ...) in its module
/// by `@train_step`, the whole training step in tg:
///
///   train_step(params..., adam_m..., adam_v..., step, tokens, targets)
///       -> (params..., adam_m..., adam_v..., loss, grad_norm, lr)
///
/// with the loss averaged over `config.microBatches` micro-batches of the
/// global batch, global-norm clipping and AdamW as torch.optim.AdamW computes
/// them, and the learning-rate schedule of `config`. Parameters, optimizer
/// state and the loss are in the loss's precision (f32, or f64 for an f64
/// graph); the forward and backward run in the forward's element type (bf16
/// under `precision: bf16`).
LogicalResult buildTrainStep(func::FuncOp forward,
                             const frontend::TrainConfig &config);

} // namespace mlir::tg

#endif
