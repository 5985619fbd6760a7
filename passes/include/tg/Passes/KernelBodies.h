#ifndef TG_PASSES_KERNELBODIES_H
#define TG_PASSES_KERNELBODIES_H

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::tg {

/// Positions (keys, or queries for the key gradients) a flash attention
/// kernel handles per step of its inner loops: one vector of scores.
constexpr int64_t kFlashAttentionTile = 16;

/// True if emitKernelBody knows `op`: the op declares Tg_HasKernelBody (or
/// Tg_Elementwise, which implies it) in ODS.
bool hasKernelBody(Operation *op);

/// The iteration shape of an elementwise group: a block (a kernel's or a
/// dispatch region's) whose ops are all elementwise, or rank-0 splat
/// tg.constants, with every elementwise result of one shape. Such a block is
/// emitted as one loop nest (emitElementwiseGroup). None otherwise.
std::optional<ArrayRef<int64_t>> elementwiseGroupShape(Block &body);

/// Emits elementwise group `body` (see elementwiseGroupShape) as one
/// linalg.generic: `inputs` are memrefs for the block's arguments (read with
/// numpy broadcasting), `outputs` memrefs receiving the values `yielded`
/// (results of the block's ops), all written in the same iteration, after
/// every input element of that iteration has been read. That is what lets an
/// output be the buffer of an input of the same shape (state updated in
/// place, PlanBuffers).
LogicalResult emitElementwiseGroup(OpBuilder &b, Block &body,
                                   ValueRange inputs, ValueRange yielded,
                                   ValueRange outputs);

/// Emits the loops computing tg op `op` at the builder's insertion point.
/// `operands` and `results` are static, identity-layout memrefs matching
/// op's operand and result tensor types; results are fully written. The body
/// uses linalg (elementwise, layout, reductions, matmul) and scf loops (norms,
/// softmax, losses, embeddings, RoPE; flash attention over vector rows), in
/// the op's own element type.
LogicalResult emitKernelBody(OpBuilder &b, Operation *op, ValueRange operands,
                             ValueRange results);

} // namespace mlir::tg

#endif
