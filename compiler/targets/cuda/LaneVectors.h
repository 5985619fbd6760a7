// A lane's iterations of a row loop as vectors. A warp strides a row's loop
// over its 32 lanes; one element a lane and access moves 64 bytes of bf16 a
// warp instruction, and a softmax over the scores ran at a quarter of the
// device's copy bandwidth. Where every access of the loop body reads or
// writes element i of a flat buffer (at a uniform offset plus the loop's
// index), a lane can take `width` consecutive iterations at once: 16-byte
// vector loads and stores, the body's arithmetic on vectors, and its folds as
// vector accumulators reduced once after the loop.
#ifndef TG_TARGETS_CUDA_LANEVECTORS_H
#define TG_TARGETS_CUDA_LANEVECTORS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg::cuda {

/// The widest access a thread makes (ld.global.v4.b32).
inline constexpr int64_t kVectorBytes = 16;

/// How a lane takes the iterations of a row loop: `width` consecutive
/// iterations as one vector (16 bytes of its widest access), or 1 where the
/// body does anything else with the index (or an offset or the start is not
/// a multiple of it). `remainder`: the range may end in fewer than `width`
/// iterations (the logits' 50257 columns), which then run one at a time
/// after the vectors.
struct LaneVectors {
  int64_t width = 1;
  bool remainder = false;
};

/// The lane vectors of `loop`, strided from its lower bound plus a multiple
/// of `startMultiple` (0: at the lower bound).
LaneVectors laneVectorsOf(scf::ForOp loop, int64_t startMultiple);

/// Clones `loop`'s body for the `width` iterations from the induction
/// variable's mapped value, whose iter_args are mapped to vector
/// accumulators; returns the values to yield.
SmallVector<Value> cloneVectorBody(OpBuilder &b, scf::ForOp loop, int64_t width,
                                   IRMapping &map);

/// Replaces runs of scalar loads of consecutive elements of a flat buffer in
/// one block (offsets b + j, b + j + 1, ... from one base b, j a multiple of
/// the run, b known to be one) by 16-byte vector loads and extracts: the
/// column blocks of a bias or norm gradient, whose thread reads 8 neighbours
/// of a row, then take one load in bf16 (two in f32) instead of 8.
void coalesceConsecutiveLoads(Operation *root);

} // namespace mlir::tg::cuda

#endif
