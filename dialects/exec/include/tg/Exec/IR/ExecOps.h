#ifndef TG_EXEC_IR_EXECOPS_H
#define TG_EXEC_IR_EXECOPS_H

#include "tg/Exec/IR/ExecDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tg/Exec/IR/ExecEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tg/Exec/IR/ExecOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "tg/Exec/IR/ExecOps.h.inc"

namespace mlir::tg::exec {
/// Every buffer starts on this many bytes in the arena: kernels load and
/// store vectors assuming it.
inline constexpr int64_t kBufferAlignment = 64;
/// Ops that run on a stream and return a timepoint.
bool isCommand(Operation *op);
/// The timepoints a command awaits (its `awaits` operands).
OperandRange getAwaits(Operation *command);
/// Appends `timepoints` to a command's awaits (skipping ones it has).
void addAwaits(Operation *command, ValueRange timepoints);
/// The buffers a command reads and writes (an in-place collective both).
SmallVector<Value> getReadBuffers(Operation *command);
SmallVector<Value> getWrittenBuffers(Operation *command);
/// The resource a buffer lives in (views and packs resolved: a packed
/// resource lives in its pack).
ResourceOp getStorage(Value buffer);
/// The resources placed inside `pack` (`exec.resource ... in %pack`), in
/// use order; none if it is not a pack.
SmallVector<ResourceOp> getPackMembers(ResourceOp pack);
/// Where a buffer starts in its storage, in bytes (the views' offsets and
/// a packed resource's place in its pack).
int64_t getByteOffset(Value buffer);
/// Bytes [begin, end) of a storage.
struct ByteRange {
  uint64_t begin, end;
  bool overlaps(ByteRange other) const {
    return begin < other.end && other.begin < end;
  }
};
/// The bytes of its storage a buffer covers.
ByteRange getByteRange(Value buffer);
/// The stream a command runs on.
int64_t getStream(Operation *command);
/// Runs `fn` on every exec.program under `root`, stopping at the first
/// failure (a pass over programs).
LogicalResult forEachProgram(Operation *root,
                             function_ref<LogicalResult(ProgramOp)> fn);
/// Bytes of a static memref type.
int64_t getByteSize(MemRefType type);
/// Bytes of one element of `element` type in a buffer.
int64_t getElementByteSize(Type element);
/// Whether resources of `kind` may be packed (`exec.resource ... in %pack`):
/// parameters, moments, compute copies and scratch.
bool isPackableKind(ResourceKind kind);
/// The buffer a ranked tensor of `tensorType` is stored in (identity layout).
MemRefType getBufferType(Type tensorType);
/// Erases the kernels among `kernels` that no exec.dispatch under `root`
/// runs any more (a fusion pass removed their last dispatch): they are not
/// compiled.
void eraseUndispatchedKernels(Operation *root, ArrayRef<Operation *> kernels);
/// The one op of `dispatch`'s kernel (on tensors) if the kernel is exactly
/// that op of its arguments in order, returning its one result, and the
/// dispatch has one output; null otherwise. What the exec-level fusions look
/// for around a GEMM (a layout op, an activation).
Operation *getSoleKernelOp(DispatchOp dispatch, SymbolTableCollection &symbols);
/// The one GEMM writing `product`, a scratch buffer of its own, before
/// `reader` reads it; with `onlyReader`, null unless nothing but `reader`
/// reads it. The GEMM whose epilogue an exec-level fusion extends.
GemmOp getGemmWriter(Value product, DispatchOp reader, bool onlyReader);
/// Moves `op` just before `anchor`, in their block, leaving the order of the
/// block's other ops known: Operation::moveBefore splices, which forgets the
/// whole block's order, so that the next isBeforeInBlock numbers every op of
/// it again. The exec-level fusions, which move a buffer's declaration up to
/// a GEMM and then ask the order of the next pair of commands, took time
/// quadratic in the program's ops that way (a quarter of GPT-3 175B's
/// compile).
void moveBeforeInOrder(Operation *op, Operation *anchor);
/// A kernel function still on tensors (inputs -> results), before
/// tg-bufferize-kernels puts it on memrefs (inputs, then outputs).
bool isKernelOnTensors(FunctionType kernel);
} // namespace mlir::tg::exec

#endif
