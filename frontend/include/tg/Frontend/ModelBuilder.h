#ifndef TG_FRONTEND_MODELBUILDER_H
#define TG_FRONTEND_MODELBUILDER_H

#include "tg/Frontend/ModelConfig.h"
#include "tg/IR/TgDialect.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace mlir::tg::frontend {

/// A parameter's initialisation rule; `std` is used by InitKind::Normal only.
/// Becomes the argument's `tg.init` (#tg.init<...>).
struct ParamInit {
  InitKind kind = InitKind::Zeros;
  double std = 0;
};

/// One model parameter: its Hugging Face name, shape (HF layout) and
/// initialisation rule.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  ParamInit init;
};

/// The parameters of `config` in Hugging Face order and layout.
std::vector<ParamSpec> parameterSpecs(const ModelConfig &config);

/// Adds `func.func @forward(tokens, targets, params...) -> (loss, logits)` to
/// `module` for a [batch, seqLen] token block. Parameters and activations use
/// `elementType`; the loss is computed in f32 (f64 for an f64 graph). `location` seeds the ops'
/// locations; every value is named after what it is.
mlir::func::FuncOp buildForward(mlir::ModuleOp module,
                                const ModelConfig &config, int64_t batch,
                                int64_t seqLen, mlir::Type elementType,
                                mlir::Location location);

/// A short SSA-friendly name for a parameter:
/// "transformer.h.3.mlp.c_fc.weight" -> "h3_mlp_c_fc_w" (lives in the tg
/// dialect, so passes can use it without the frontend).
using mlir::tg::shortParamName;

} // namespace mlir::tg::frontend

#endif
