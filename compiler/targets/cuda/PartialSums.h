// A thread's share of a float64 sum, added in float32. The kernel bodies sum
// in float64 (Emitter::wideSums: each term extended, then added), which the
// CPU does at full speed; a GPU converts to and from float64 at 16 results a
// clock an SM on sm_90 (float32 adds: 128), and a layer-norm
// gradient's row pass converted each element four times. A thread's share of
// a few hundred terms at most is added in float32 instead (its error at most
// (n - 1) * 2^-24 of the sum of the terms' magnitudes, for n terms) and
// joins the rest of the sum (the other lanes and shares) in float64: blockwise
// accumulation, as long sums must be, with one conversion a share.
#ifndef TG_TARGETS_CUDA_PARTIALSUMS_H
#define TG_TARGETS_CUDA_PARTIALSUMS_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg::cuda {

/// Narrows, in place, the float64 sums of `loop` (one thread's share of a
/// fold) whose terms are float64 extensions of narrower floats, scalars or
/// vectors: each accumulates in float32 from 0.0. Only where the thread's
/// float32 sum takes at most `mostTerms` terms (0: never): `terms`, what the
/// loop adds to an accumulator (times a vector's width where its elements
/// are reduced together before they widen), or none where unknown. Returns
/// which of the loop's results are float32 now.
SmallVector<bool> narrowPartialSums(scf::ForOp loop,
                                    std::optional<int64_t> terms,
                                    int64_t mostTerms);

/// narrowPartialSums for a fold of a row's maximum and sum of exponentials
/// (kMaxSumExpAttr; fold 1 the float64 sum): the sum's ops, each iteration's
/// exponential extended to float64 and the partial sums scaled by it, in
/// float32 instead. Returns whether it narrowed.
bool narrowMaxSumExp(scf::ForOp loop, std::optional<int64_t> terms,
                     int64_t mostTerms);

/// The fold's results from `results` (of the loop narrowed by
/// narrowPartialSums, of a loop that continues it, or their vectors
/// reduced): the narrowed ones extended to float64, and added to the loop's
/// `inits` where those are not 0.0.
SmallVector<Value> widenPartialSums(OpBuilder &b, Location loc,
                                    ValueRange results, ValueRange inits,
                                    ArrayRef<bool> narrowed);

} // namespace mlir::tg::cuda

#endif
