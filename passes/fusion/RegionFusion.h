// What the fusion passes over dispatch regions share: merging a producer
// region into a consumer region, and the checks that make it legal.
#ifndef TG_PASSES_FUSION_REGIONFUSION_H
#define TG_PASSES_FUSION_REGIONFUSION_H

#include "tg/Exec/IR/ExecOps.h"

#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir::tg {

/// The one op of a region, or null.
Operation *soleOp(exec::DispatchRegionOp region);

/// Bytes of a tensor value: what a fusion saves writing and reading again.
int64_t byteSize(Value v);

/// The op computing `result` of a dispatch region, which a remark about
/// fusing it points at.
Operation *producerOf(OpResult result);

/// A region that is exactly a bias add of a library GEMM's product: left
/// alone, so that exec-fuse-gemm-bias makes it the GEMM's epilogue (no pass
/// over the product at all on the CPU, cuBLASLt's epilogue on CUDA).
bool isGemmBiasAdd(exec::DispatchRegionOp region);

/// Rank-0 splat constants that `region` reads (AdamW's betas, a mean's 1/n)
/// become part of it, compiled into the kernel instead of buffers it reads;
/// each value once (constants already inside are reused).
void cloneSplatConstants(exec::DispatchRegionOp region);

/// Why the kernel of `region` and `producer` merged would be refused: it
/// would read more than `maxInputs` buffers ("" if not).
std::string tooManyInputs(exec::DispatchRegionOp region,
                          exec::DispatchRegionOp producer, int64_t maxInputs);

/// Why `region` may not absorb `producer`, which runs before it: a user of
/// the producer's results that runs before `region` ("" if none).
std::string readBeforeConsumer(exec::DispatchRegionOp producer,
                               exec::DispatchRegionOp region);

/// Moves `producer`'s ops to the front of `region`; the merged region, at
/// `region`'s place, yields what `region` did and the producer's results
/// that something outside still reads. Returns the merged region.
exec::DispatchRegionOp absorb(exec::DispatchRegionOp region,
                              exec::DispatchRegionOp producer);

/// Moves the ops `moving` of `region` into a new region right after it,
/// which yields what they computed of `region`'s results; `region` becomes
/// one yielding the rest and the values the moved ops read from it. Nothing
/// that stays may use a moved op's result. Returns the two regions (absorb
/// merges them back).
std::pair<exec::DispatchRegionOp, exec::DispatchRegionOp>
splitOff(exec::DispatchRegionOp region,
         const llvm::SetVector<Operation *> &moving);

} // namespace mlir::tg

#endif
