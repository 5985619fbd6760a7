#ifndef TG_FRONTEND_MODELCONFIG_H
#define TG_FRONTEND_MODELCONFIG_H

#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tg::frontend {

enum class ModelFamily { Gpt2, Llama };

/// A transformer description read from a Hugging Face `config.json`, in the
/// family-neutral terms the graph builders use.
struct ModelConfig {
  ModelFamily family = ModelFamily::Gpt2;
  int64_t vocabSize = 0;
  int64_t maxPositions = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t intermediateSize = 0;
  double normEpsilon = 0;
  /// GPT-2 only: true for the tanh approximation of GELU ("gelu_new").
  bool geluTanh = true;
  /// Llama only.
  double ropeTheta = 10000.0;
  bool tieWordEmbeddings = true;

  int64_t headDim() const { return hiddenSize / numHeads; }
};

/// Reads and validates a Hugging Face config.json (model_type "gpt2" or
/// "llama"). Errors name the file and the field.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef path);

} // namespace mlir::tg::frontend

#endif
