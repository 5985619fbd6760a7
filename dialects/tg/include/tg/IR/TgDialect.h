#ifndef TG_IR_TGDIALECT_H
#define TG_IR_TGDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tg/IR/TgOpsDialect.h.inc"

namespace mlir::tg {
/// Argument attribute naming a model parameter (its Hugging Face name).
inline constexpr llvm::StringLiteral kParamAttr = "tg.param";
/// Argument attribute giving a parameter's initialisation rule, one of
/// "zeros", "ones" or "normal:STD".
inline constexpr llvm::StringLiteral kInitAttr = "tg.init";
/// Argument attribute naming a data input ("tokens", "targets", "step", ...).
inline constexpr llvm::StringLiteral kInputAttr = "tg.input";
/// Result attribute naming a function result ("loss", "logits", ...).
inline constexpr llvm::StringLiteral kOutputAttr = "tg.output";
} // namespace mlir::tg

#endif
