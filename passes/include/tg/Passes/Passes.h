#ifndef TG_PASSES_PASSES_H
#define TG_PASSES_PASSES_H

namespace mlir::tg {

/// Registers TGC's passes with the global registry (for tg-opt):
///   tg-autodiff{function=NAME}: adds @NAME_grad returning the loss and the
///     gradient of every tg.param argument (results "grad:<hf name>").
///   tg-build-train-step{config=TRAIN.json function=NAME}: replaces @NAME by
///     @train_step (see TrainStep.h).
void registerTgPasses();

} // namespace mlir::tg

#endif
