#ifndef TG_PASSES_BUFFERPLAN_H
#define TG_PASSES_BUFFERPLAN_H

#include "tg/Passes/Program.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::tg {

/// Where every tensor of a function lives in one arena.
///
/// The arena has two regions. The state region holds what outlives a call:
/// arguments (parameters, optimizer state, inputs), constants and results.
/// The working region holds everything else; its buffers are assigned first
/// fit in program order and reused once their last reader has run, so its
/// size is the peak of live temporaries (given this op order).
struct BufferPlan {
  /// Every tensor value; a reshape shares its source's range.
  llvm::DenseMap<Value, ArenaRange> ranges;
  /// Results that could not be written over the argument they update: copy
  /// result -> argument after the last op.
  SmallVector<std::pair<Value, Value>> copiesAtEnd;
  uint64_t stateBytes = 0, workingBytes = 0;
};

/// Plans `func`'s single block. `updates[i]`, when set, is the argument that
/// result i replaces (a parameter or optimizer state): the result is written
/// over it in place when the argument is dead by then (or read only by the
/// elementwise op producing the result), and copied back otherwise.
BufferPlan planBuffers(func::FuncOp func,
                       ArrayRef<std::optional<unsigned>> updates);

/// Bytes a tensor of `type` occupies.
uint64_t tensorBytes(Type type);

} // namespace mlir::tg

#endif
