#ifndef TG_FRONTEND_FAMILIES_H
#define TG_FRONTEND_FAMILIES_H

// Private to the frontend: what each model family contributes.

#include "GraphBuilder.h"
#include "tg/Frontend/ModelBuilder.h"

namespace mlir::tg::frontend {

std::vector<ParamSpec> gpt2Parameters(const ModelConfig &config);
/// Returns the logits of the GPT-2 forward pass for `tokens` [B, T].
mlir::Value buildGpt2Logits(GraphBuilder &g, const ModelConfig &config,
                            mlir::Value tokens);

std::vector<ParamSpec> llamaParameters(const ModelConfig &config);
mlir::Value buildLlamaLogits(GraphBuilder &g, const ModelConfig &config,
                             mlir::Value tokens);

/// A normal rule for the GPT-2 scheme: std 0.02, or 0.02 / sqrt(2 * layers)
/// for projections that write into the residual stream.
ParamInit normalInit(const ModelConfig &config, bool residualProjection);

} // namespace mlir::tg::frontend

#endif
