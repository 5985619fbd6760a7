#include "tg/Frontend/ModelConfig.h"
#include "tg/Frontend/JsonFieldReader.h"

using namespace llvm;
using namespace mlir::tg::frontend;

/// GPT-2 fields, with Hugging Face's GPT2Config defaults for the optional ones.
static ModelConfig readGpt2(JsonFieldReader &fields) {
  ModelConfig config;
  config.family = ModelFamily::Gpt2;
  config.vocabSize = fields.requiredInt("vocab_size", 1);
  config.maxPositions = fields.requiredInt("n_positions", 1);
  config.hiddenSize = fields.requiredInt("n_embd", 1);
  config.numLayers = fields.requiredInt("n_layer", 1);
  config.numHeads = fields.requiredInt("n_head", 1);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      fields.optionalInt("n_inner", 4 * config.hiddenSize, 1);
  config.normEpsilon =
      fields.optionalNumber("layer_norm_epsilon", 1e-5, 0, /*minExclusive=*/true);
  config.tieWordEmbeddings = fields.optionalBool("tie_word_embeddings", true);
  std::string activation =
      fields.optionalString("activation_function", "gelu_new");
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh" ||
      activation == "gelu_fast")
    config.geluTanh = true;
  else if (activation == "gelu")
    config.geluTanh = false;
  else
    fields.fail("activation_function",
                "'" + activation +
                    "' is not supported; use gelu_new, gelu_pytorch_tanh, "
                    "gelu_fast (tanh GELU) or gelu (erf GELU)");
  if (config.numHeads > 0 && config.hiddenSize % config.numHeads != 0)
    fields.fail("n_head", "n_embd (" + Twine(config.hiddenSize) +
                              ") must be divisible by n_head (" +
                              Twine(config.numHeads) + ")");
  return config;
}

/// Llama fields, with Hugging Face's LlamaConfig defaults for the optional ones.
static ModelConfig readLlama(JsonFieldReader &fields) {
  ModelConfig config;
  config.family = ModelFamily::Llama;
  config.vocabSize = fields.requiredInt("vocab_size", 1);
  config.hiddenSize = fields.requiredInt("hidden_size", 1);
  config.intermediateSize = fields.requiredInt("intermediate_size", 1);
  config.numLayers = fields.requiredInt("num_hidden_layers", 1);
  config.numHeads = fields.requiredInt("num_attention_heads", 1);
  config.numKvHeads =
      fields.optionalInt("num_key_value_heads", config.numHeads, 1);
  config.maxPositions = fields.optionalInt("max_position_embeddings", 2048, 1);
  config.normEpsilon =
      fields.optionalNumber("rms_norm_eps", 1e-6, 0, /*minExclusive=*/true);
  config.ropeTheta =
      fields.optionalNumber("rope_theta", 10000.0, 0, /*minExclusive=*/true);
  config.tieWordEmbeddings = fields.optionalBool("tie_word_embeddings", false);
  std::string activation = fields.optionalString("hidden_act", "silu");
  if (activation != "silu")
    fields.fail("hidden_act", "'" + activation +
                                  "' is not supported; Llama models use silu");
  if (config.numHeads > 0 && config.hiddenSize % config.numHeads != 0)
    fields.fail("num_attention_heads",
                "hidden_size (" + Twine(config.hiddenSize) +
                    ") must be divisible by num_attention_heads (" +
                    Twine(config.numHeads) + ")");
  else if (config.numHeads > 0 && config.headDim() % 2 != 0)
    fields.fail("num_attention_heads",
                "the head dim hidden_size / num_attention_heads = " +
                    Twine(config.headDim()) + " must be even for RoPE");
  if (config.numKvHeads > 0 && config.numHeads % config.numKvHeads != 0)
    fields.fail("num_key_value_heads",
                "num_attention_heads (" + Twine(config.numHeads) +
                    ") must be divisible by num_key_value_heads (" +
                    Twine(config.numKvHeads) + ")");
  return config;
}

Expected<ModelConfig> mlir::tg::frontend::parseModelConfig(StringRef path) {
  Expected<json::Value> json = JsonFieldReader::parseFile(path);
  if (!json)
    return json.takeError();
  JsonFieldReader fields(path.str(), json->getAsObject());
  std::string modelType = fields.requiredString("model_type");
  if (Error error = fields.takeError())
    return std::move(error);
  ModelConfig config;
  if (modelType == "gpt2")
    config = readGpt2(fields);
  else if (modelType == "llama")
    config = readLlama(fields);
  else
    fields.fail("model_type", "'" + modelType +
                                  "' is not supported; use \"gpt2\" or "
                                  "\"llama\"");
  if (Error error = fields.takeError())
    return std::move(error);
  return config;
}
