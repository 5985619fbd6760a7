#ifndef TG_IR_TGDIALECT_H
#define TG_IR_TGDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include <optional>
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
/// Argument attribute of a parameter split over a mesh axis (a ShardAttr).
inline constexpr llvm::StringLiteral kShardAttr = "tg.shard";
/// Argument attribute of an AdamW moment split over a mesh axis (ZeRO-1),
/// an OptimizerShardAttr: the argument is the rank's chunk of the flattened,
/// padded moment.
inline constexpr llvm::StringLiteral kOptimizerShardAttr = "tg.optimizer_shard";
/// The axis tensor parallelism splits over.
inline constexpr llvm::StringLiteral kTensorAxis = "tensor";
/// The input holding the rank's index along each mesh axis (I64 [axes]).
inline constexpr llvm::StringLiteral kMeshCoordinateInput = "mesh_coordinate";
/// Argument attribute naming a data input ("tokens", "targets", "step", ...).
inline constexpr llvm::StringLiteral kInputAttr = "tg.input";
/// Result attribute naming a function result ("loss", "logits", ...).
inline constexpr llvm::StringLiteral kOutputAttr = "tg.output";
/// Argument attribute of training state other than parameters, a StateAttr:
/// #tg.state<adam_m, "NAME">, #tg.state<adam_v, "NAME"> or
/// #tg.state<compute, "NAME">.
inline constexpr llvm::StringLiteral kStateAttr = "tg.state";
/// Result attribute of a result holding the new value of a state argument
/// of the same function, a StateAttr: #tg.state<param, "NAME"> names the
/// argument with tg.param = "NAME", a moment kind the argument with the
/// same tg.state.
inline constexpr llvm::StringLiteral kUpdatesAttr = "tg.updates";

/// Module attributes declaring the device mesh the module's step runs on
/// (set by `tgc --mesh`): the axis names, a StrArrayAttr (["data"]), and
/// their sizes, a DenseI64ArrayAttr of the same length (array<i64: 4>).
/// Ranks are numbered row-major over the sizes. A module without them runs
/// on one device. The dialect verifies them (TgDialect.cpp).
inline constexpr llvm::StringLiteral kMeshAxesAttr = "tg.mesh_axes";
inline constexpr llvm::StringLiteral kMeshShapeAttr = "tg.mesh_shape";
/// The mesh axis data parallelism splits the batch over (`--mesh dp=D`).
inline constexpr llvm::StringLiteral kDataAxis = "data";

/// A module's device mesh (kMeshAxesAttr, kMeshShapeAttr).
struct Mesh {
  ArrayAttr axes;
  ArrayRef<int64_t> shape;
  /// The size of axis `name`, or std::nullopt when the mesh has no such axis.
  std::optional<int64_t> getAxisSize(llvm::StringRef name) const;
};
/// The mesh declared on `op` when it is a module, else on the nearest module
/// enclosing it; std::nullopt when that module declares none (or only half
/// of it, which the verifier rejects).
std::optional<Mesh> getMesh(Operation *op);
/// Declares the mesh `axes` x `shape` on `module`.
void setMesh(Operation *module, llvm::ArrayRef<llvm::StringRef> axes,
             llvm::ArrayRef<int64_t> shape);

/// The external (safetensors / artifact) name of a function argument, from
/// its attribute dictionary: the tg.param or tg.input name, or
/// "adam_m:NAME" / "adam_v:NAME" / "compute:NAME" for a tg.state argument;
/// "" when none.
std::string externalArgumentName(DictionaryAttr argAttrs);
/// The external name of a function result: "param:NAME", "adam_m:NAME",
/// "adam_v:NAME" or "compute:NAME" for a tg.updates result, else its
/// tg.output name; "" when none.
std::string externalResultName(DictionaryAttr resultAttrs);
/// "param:NAME", "adam_m:NAME", "adam_v:NAME" or "compute:NAME".
std::string externalStateName(StateAttr state);

/// A short SSA-friendly name for a parameter:
/// "transformer.h.3.mlp.c_fc.weight" -> "h3_mlp_c_fc_w".
std::string shortParamName(llvm::StringRef hfName);
} // namespace mlir::tg

#endif
