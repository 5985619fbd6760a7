#ifndef TG_PASSES_KERNELBODIES_H
#define TG_PASSES_KERNELBODIES_H

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::tg {

class CrossEntropyGradOp;
class RopeOp;

/// Flash attention kernels take kFlashAttentionLanes rows of a plane per
/// task (query rows, or key rows for the key and value gradients: the lanes
/// of their vectors), and the rows they meet (keys, or queries) a tile at a
/// time: kFlashForwardTile of them forward, kFlashGradientTile in the
/// gradient, whose tiles hold two scores a position (q.k and dO.v) and would
/// not fit the registers at 16.
constexpr int64_t kFlashAttentionLanes = 16, kFlashForwardTile = 16,
                  kFlashGradientTile = 8;

/// Marks an scf.for inside a row loop whose iterations depend on each other
/// (they add into the same elements): a GPU target runs it in order on the
/// row's team, spreading only the loops inside it over the lanes. Every
/// other loop of a row touches element i at its own index i only.
constexpr llvm::StringLiteral kInOrderAttr = "tg.in_order";

/// Marks a row loop (scf.parallel) whose rows are blocks of up to 8 adjacent
/// columns of a row-major layout, each column summed over the layout's rows
/// by a fold of its own (the CUDA form of column sums: a bias or norm weight
/// gradient): a GPU target gives each row a thread rather than a warp, so
/// that at each step of their folds the lanes of a warp read 32 adjacent
/// blocks (a 16-byte vector each in bf16), and a thread's sums need no
/// shuffles.
constexpr llvm::StringLiteral kThreadRowsAttr = "tg.thread_rows";

/// Marks a kThreadRowsAttr loop whose folds' iteration r reads only row r
/// of the layout and what a row loop before it computed for row r
/// (Emitter::columnSums: a norm gradient's weight and bias sums): a GPU
/// target may add a row's columns as soon as that row loop has written it
/// (tg-cuda-map-kernels' column-sums-in-row-pass). A bias gradient's sums
/// over a middle dim read, at iteration r, rows of other indices.
constexpr llvm::StringLiteral kRowLocalColumnsAttr = "tg.row_local_columns";

/// Marks an scf.for folding a row's maximum and the sum of its exponentials
/// in one pass (the online softmax): iter_args (max, sum), max in the
/// element type and sum in f64, from (-inf, 0), each iteration's x joined as
/// combineMaxSumExp((max, sum), (x, 1)). Folds of a loop so marked combine
/// by combineMaxSumExp, not one op each: a GPU target joins the lanes' pairs
/// with it.
constexpr llvm::StringLiteral kMaxSumExpAttr = "tg.max_sum_exp";

/// Marks an f32 op the kernel bodies compute in place of a 16-bit one (a
/// bf16 row's online softmax scale, combineMaxSumExp; a probability's
/// exponential and division where it is written to a 16-bit row, softmaxRow):
/// a GPU target may approximate it as it does 16-bit math
/// (tg-cuda-approximate-half-math).
constexpr llvm::StringLiteral kForHalfFloatsAttr = "tg.for_half_floats";

/// The pair (max(m1, m2), s) of two partial folds (m1, s1) and (m2, s2) of a
/// row's maximum and its sum of exponentials, s1 and s2 relative to m1 and
/// m2: the smaller side's sum scaled by exp(-|m1 - m2|) (computed in the
/// max's type, f32 at least, marked kForHalfFloatsAttr where that widened a
/// 16-bit max, then extended to the sum's), so one exponential a join. Equal
/// maxima (-inf and -inf included: no NaN from their difference) scale by 1.
/// A null s2 stands for 1 (one element, x = m2). Works on scalars and on
/// vectors alike.
std::pair<Value, Value> combineMaxSumExp(OpBuilder &b, Location loc, Value m1,
                                         Value s1, Value m2, Value s2);

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

/// Ops that a row group may compute the input of, elementwise ops before
/// them (a prologue): layer_norm, rms_norm, softmax (row by row), and
/// reduce_sum, reduce_mean (isSum: element by element, as they sum them).
bool takesRowPrologue(Operation *op);
bool isSum(Operation *op);
/// Row gradients whose dx a row group may pass through elementwise ops
/// after them (an epilogue): layer_norm_grad, rms_norm_grad, softmax_grad.
bool takesRowEpilogue(Operation *op);

/// Whether `op` is a sum over the rows of norm gradient `rowOp`'s row space
/// (reduce_sum over every dim but the last, in its element type), which a
/// row group's column pass computes beside the weight and bias gradients:
/// a bias gradient of the projection whose output the residual stream's
/// gradient is, read back as the column pass reads dy and x rather than by
/// a kernel of its own.
bool isColumnSumOf(Operation *op, Operation *rowOp);

/// The row op of a row group, or null: a block (a kernel's or a dispatch
/// region's) of one row op, elementwise ops of the row op's input shape and
/// rank-0 splat tg.constants, where the elementwise ops either all come
/// before the row op and compute its row input (its operand 0; its other
/// operands come from outside), or all come after a row gradient and read
/// none of its results but dx; after a norm gradient, also column sums
/// (isColumnSumOf) of dx or of an epilogue value that the block yields,
/// whose sums nothing in the block reads.
Operation *rowGroupOp(Block &body);

/// Emits row group `body` (see rowGroupOp) as one loop over the rows: a row
/// is computed by the prologue and normalised while it is in cache, or
/// each dx element goes through the epilogue as the row gradient computes
/// it; a sum's prologue computes each element as the sum reads it. `inputs`, `yielded` and `outputs` are as for emitElementwiseGroup;
/// a value that is not yielded is not stored (the row input then lives in
/// the row op's result rows until the row op overwrites them). `vectorRows`
/// as for emitKernelBody.
LogicalResult emitRowGroup(OpBuilder &b, Block &body, ValueRange inputs,
                           ValueRange yielded, ValueRange outputs,
                           bool vectorRows);

/// A block that is a tg.cross_entropy and the tg.cross_entropy_grad of the
/// same logits and targets (tg-fuse-into-rows' loss-with-gradient), with
/// what it took in around them: the logits may come through a slice of
/// longer rows (padded for the GEMM that wrote them, tg-align-gemm-rows)
/// and a widening cast (bf16 logits), the gradient go through a narrowing
/// cast and a zero padding of its rows. Each is null where absent; false
/// for any other block.
struct LossGradientChain {
  Operation *slice = nullptr, *widen = nullptr, *narrow = nullptr, *pad = nullptr;
  Operation *grad = nullptr; // the tg.cross_entropy_grad
  explicit operator bool() const { return grad != nullptr; }
};
LossGradientChain lossWithGradient(Block &body);
/// The links of such a chain: a slice keeping the first elements of each
/// row, a zero padding after them (row lengths change, nothing else), a
/// float cast to a wider or narrower type.
bool isRowSlice(Operation *op);
bool isRowPad(Operation *op);
bool isWideningCast(Operation *op);
bool isNarrowingCast(Operation *op);

/// Emits that pair as one row loop: each row's softmax, its gradient and its
/// loss from one max and one sum of exponentials; the rows' losses, kept in
/// a local buffer, are then summed in order (as tg.cross_entropy sums them).
/// The slice and the casts are read and written through, the pad written
/// with the rows: no intermediate is stored.
/// `inputs`, `yielded` and `outputs` as for emitElementwiseGroup;
/// `vectorRows` as for emitKernelBody.
LogicalResult emitLossWithGradient(OpBuilder &b, Block &body, ValueRange inputs,
                                   ValueRange yielded, ValueRange outputs,
                                   bool vectorRows);

/// Whether `op` is a tg.transpose between [B, T, H, D] and [B, H, T, D]
/// (permutation [0, 2, 1, 3]: the heads' split or merge).
bool isHeadsTranspose(Operation *op);

/// The rope of a block that is a tg.rope with a transpose between
/// [B, T, H, D] and [B, H, T, D] before it (its input's), after it (its
/// result's) or both (tg-fuse-into-rows' heads' transposes), each read by
/// the next op only; or null.
RopeOp ropeGroup(Block &body);

/// Emits that block as the rope's kernel reading its input rows, and writing
/// its result rows, where the transposes would have put them. `inputs`,
/// `yielded` and `outputs` as for emitElementwiseGroup; `vectorRows` as for
/// emitKernelBody.
LogicalResult emitRopeGroup(OpBuilder &b, Block &body, ValueRange inputs,
                            ValueRange yielded, ValueRange outputs,
                            bool vectorRows);

/// Whether `body` is a flash group (tg-fuse-attention-layouts): flash
/// attention ops with the views around them: slices, reshapes and
/// transposes from the block's inputs to the flash ops' operands;
/// transposes, reshapes and concatenations from their results to what the
/// block yields (each read by the next op only). Every view must leave rows
/// of contiguous elements, and every value be stored in one place.
bool isFlashGroup(Block &body);
/// Emits that block as its flash kernels reading their operands and writing
/// their results where the views put them: the views move nothing. A flash
/// result that is neither yielded nor viewed into an output (a log-sum-exp
/// the next flash op reads) is kept in a local buffer. `inputs`, `yielded`
/// and `outputs` as for emitElementwiseGroup.
LogicalResult emitFlashGroup(OpBuilder &b, Block &body, ValueRange inputs,
                             ValueRange yielded, ValueRange outputs);
/// Emits the loops computing tg op `op` at the builder's insertion point.
/// `operands` and `results` are static, identity-layout memrefs matching
/// op's operand and result tensor types; results are fully written. The body
/// uses linalg (elementwise, layout, reductions, matmul) and scf loops (norms,
/// softmax, losses, embeddings, RoPE; flash attention over vector rows), in
/// the op's own element type. `vectorRows`: a row of a row loop runs on one
/// thread (the CPU), so a row may be computed as whole vectors (RoPE's);
/// otherwise (the CUDA target spreads a row's loops over a warp's lanes)
/// rows are loops of scalar steps, and a softmax row is computed again in
/// each pass rather than stored between them (softmaxRow).
LogicalResult emitKernelBody(OpBuilder &b, Operation *op, ValueRange operands,
                             ValueRange results, bool vectorRows = true);

} // namespace mlir::tg

#endif
