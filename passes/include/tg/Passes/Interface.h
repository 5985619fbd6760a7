#ifndef TG_PASSES_INTERFACE_H
#define TG_PASSES_INTERFACE_H

#include "tg/Exec/IR/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::tg {

/// Module attribute: the model's vocabulary size (token ids are below it),
/// set by the frontend and recorded in the compiled program.
inline constexpr llvm::StringLiteral kVocabSizeAttr = "tg.vocab_size";

/// Function attribute set by tg-fuse-attention and carried to the function's
/// exec.program by tg-lower-to-exec, for `tgc --stats`: how each attention
/// op is computed and why, an array of {op, kernel ("flash" or
/// "decomposed"), reason} dictionaries in program order.
inline constexpr llvm::StringLiteral kAttentionPlanAttr = "tg.attention_plan";
/// On a function: its matmul and attention FLOPs as the model states them
/// (countMatmulFlops before tg-decompose-attention), which the decomposition
/// must not change: it may compute fewer (kept probabilities, causal
/// blocks), but MFU counts the model's.
inline constexpr llvm::StringLiteral kModelFlopsAttr = "tg.model_flops";

/// What an argument or result of a training step is to the runtime.
struct InterfaceRole {
  exec::ResourceKind kind = exec::ResourceKind::input;
  /// Hugging Face name (parameters and their moments) or interface name.
  std::string name;
  /// A result holding the new value of the state argument (kind, name).
  bool updates = false;
  /// A parameter's initialisation rule.
  Attribute init;
  /// A parameter's split over a mesh axis (tg.shard); null when replicated.
  Attribute shard;
  /// A moment's ZeRO-1 chunking over a mesh axis (tg.optimizer_shard); null
  /// when the rank holds the whole moment.
  Attribute optimizerShard;
};

struct StepInterface {
  SmallVector<InterfaceRole> args, results;
};

/// Reads the roles from the tg argument and result attributes of `step`;
/// emits an error naming the argument or result that has none.
FailureOr<StepInterface> readStepInterface(func::FuncOp step);

} // namespace mlir::tg

#endif
