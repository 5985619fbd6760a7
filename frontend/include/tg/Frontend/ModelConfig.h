#ifndef TG_FRONTEND_MODELCONFIG_H
#define TG_FRONTEND_MODELCONFIG_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  /// GPT-2 only: attention scores divided by sqrt(head dim)
  /// (`scale_attn_weights`) and, in layer i (from 0), by i + 1
  /// (`scale_attn_by_inverse_layer_idx`).
  bool scaleAttnWeights = true;
  bool scaleAttnByInverseLayerIdx = false;
  /// GPT-2 only: `reorder_and_upcast_attn` (the scores in f32 under bf16).
  bool reorderAndUpcastAttn = false;
  /// Llama only.
  double ropeTheta = 10000.0;
  /// Llama's `rope_scaling`: none, "linear" (frequencies / factor) or
  /// "llama3" (Llama 3.1's wavelength bands).
  enum class RopeScaling { None, Linear, Llama3 };
  RopeScaling ropeScaling = RopeScaling::None;
  double ropeFactor = 1.0;
  double ropeLowFreqFactor = 0, ropeHighFreqFactor = 0;
  int64_t ropeOriginalMaxPositions = 0;
  /// Llama only: `head_dim` when the file gives it (0: hidden / heads).
  int64_t explicitHeadDim = 0;
  /// Llama family only: biases on q/k/v_proj and on o_proj (Llama's
  /// `attention_bias` sets both; Qwen2 has the first only), and on
  /// gate/up/down_proj (`mlp_bias`).
  bool qkvBias = false;
  bool outputBias = false;
  bool mlpBias = false;
  /// Mistral only: each token attends to the last `slidingWindow` positions
  /// (0: all), tg.attention's `window` on sequences longer than it.
  int64_t slidingWindow = 0;
  /// `initializer_range`: the std of the normal initialisation.
  double initializerRange = 0.02;
  bool tieWordEmbeddings = true;
  /// Keys the reader does not know (neither used nor known to leave the
  /// math alone), one message each; tgc prints them as warnings.
  std::vector<std::string> warnings;

  int64_t headDim() const {
    return explicitHeadDim ? explicitHeadDim : hiddenSize / numHeads;
  }
};

/// Size limits that keep every element and byte count of the graph within
/// int64, checked before the graph is built (with room to spare: the memory
/// planner adds many tensors' byte counts). They admit every real model
/// (GPT-3 175B, Llama 2 70B, vocabularies of 256k, sequences of 128k).
/// At most this many layers: each is built into the graph.
inline constexpr int64_t kMaxLayers = 10000;
/// Each size field (vocab, hidden, intermediate, heads, positions) at most.
inline constexpr int64_t kMaxDimension = int64_t(1) << 24;
/// Elements of any one tensor at most: 2^45, 256 TiB as f64.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 45;
/// Parameters of the whole model at most: 2^44, about 17.6 trillion.
inline constexpr int64_t kMaxParameters = int64_t(1) << 44;

/// Reads and validates a Hugging Face config.json (model_type "gpt2",
/// "llama", "qwen2" or "mistral"): `text` when given (held in memory, called
/// `path` in messages), else the file at `path`. Errors name the file and
/// the field.
llvm::Expected<ModelConfig>
parseModelConfig(llvm::StringRef path,
                 std::optional<llvm::StringRef> text = std::nullopt);

/// Checks that the activations of `config` for a [batch, seqLen] token block
/// (the logits, the attention scores, the MLP activations) stay within
/// kMaxTensorElements. The error names `trainPath`'s batch_size and seq_len
/// fields, or --batch and --seq when `trainPath` is empty. Call it before
/// buildForward.
llvm::Error checkGraphSizes(const ModelConfig &config, int64_t batch,
                            int64_t seqLen, llvm::StringRef trainPath = "");

} // namespace mlir::tg::frontend

#endif
