#ifndef TG_IR_TGDIALECT_H
#define TG_IR_TGDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include <string>

#include "tg/IR/TgOpsDialect.h.inc"

#include "tg/IR/TgAttrsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tg/IR/TgAttrs.h.inc"

namespace mlir::tg {
/// Argument attribute naming a model parameter (its Hugging Face name).
inline constexpr llvm::StringLiteral kParamAttr = "tg.param";
/// Argument attribute giving a parameter's initialisation rule, an
/// InitAttr: #tg.init<zeros>, #tg.init<ones> or #tg.init<normal, std = S>.
inline constexpr llvm::StringLiteral kInitAttr = "tg.init";
/// Argument attribute naming a data input ("tokens", "targets", "step", ...).
inline constexpr llvm::StringLiteral kInputAttr = "tg.input";
/// Result attribute naming a function result ("loss", "logits", ...).
inline constexpr llvm::StringLiteral kOutputAttr = "tg.output";
/// Argument attribute of optimizer state other than parameters, a StateAttr:
/// #tg.state<adam_m, "NAME"> or #tg.state<adam_v, "NAME">.
inline constexpr llvm::StringLiteral kStateAttr = "tg.state";
/// Result attribute of a result holding the new value of a state argument
/// of the same function, a StateAttr: #tg.state<param, "NAME"> names the
/// argument with tg.param = "NAME", a moment kind the argument with the
/// same tg.state.
inline constexpr llvm::StringLiteral kUpdatesAttr = "tg.updates";

/// The external (safetensors / artifact) name of a function argument, from
/// its attribute dictionary: the tg.param or tg.input name, or
/// "adam_m:NAME" / "adam_v:NAME" for a tg.state moment; "" when none.
std::string externalArgumentName(DictionaryAttr argAttrs);
/// The external name of a function result: "param:NAME", "adam_m:NAME" or
/// "adam_v:NAME" for a tg.updates result, else its tg.output name; "" when
/// none.
std::string externalResultName(DictionaryAttr resultAttrs);
/// "param:NAME", "adam_m:NAME" or "adam_v:NAME".
std::string externalStateName(StateAttr state);

/// A short SSA-friendly name for a parameter:
/// "transformer.h.3.mlp.c_fc.weight" -> "h3_mlp_c_fc_w".
std::string shortParamName(llvm::StringRef hfName);
} // namespace mlir::tg

#endif
