#ifndef TG_FRONTEND_GRAPHBUILDER_H
#define TG_FRONTEND_GRAPHBUILDER_H

// Private to the frontend: the small vocabulary the model builders share.

#include "tg/IR/TgOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg::frontend {

/// Creates tg ops whose results are named (through NameLoc) after what they
/// are, so the printed graph reads like the model.
class GraphBuilder {
public:
  GraphBuilder(mlir::OpBuilder &builder, mlir::Location base,
               const llvm::StringMap<mlir::Value> &params)
      : b(builder), base(base), params(params) {}

  mlir::Location loc(const llvm::Twine &name) const;
  mlir::Value param(llvm::StringRef hfName) const;

  template <typename OpT, typename... Args>
  mlir::Value create(const llvm::Twine &name, Args &&...args) {
    return OpT::create(b, loc(name), std::forward<Args>(args)...)->getResult(0);
  }

  /// x @ w (+ bias). `weightIsOutIn` is true for nn.Linear weights [out, in]
  /// and false for GPT-2 Conv1D weights [in, out].
  mlir::Value linear(const llvm::Twine &name, mlir::Value x, mlir::Value w,
                     mlir::Value bias, bool weightIsOutIn);
  /// [B, T, H*D] -> [B, H, T, D].
  mlir::Value splitHeads(const llvm::Twine &name, mlir::Value x,
                         int64_t heads);
  /// [B, H, T, D] -> [B, T, H*D].
  mlir::Value mergeHeads(const llvm::Twine &name, mlir::Value x);
  /// The mean cross-entropy of `logits` against `targets`, computed in f32
  /// (or f64 for f64 logits).
  mlir::Value loss(mlir::Value logits, mlir::Value targets);

  mlir::OpBuilder &builder() { return b; }

private:
  mlir::OpBuilder &b;
  mlir::Location base;
  const llvm::StringMap<mlir::Value> &params;
};

} // namespace mlir::tg::frontend

#endif
