#include "tg/Frontend/ModelConfig.h"
#include "tg/Frontend/JsonFieldReader.h"
#include "tg/Frontend/ModelBuilder.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <vector>

using namespace llvm;
using namespace mlir::tg::frontend;

static constexpr llvm::StringLiteral kLayersWhy =
    "each layer is built into the graph";

/// Elements of a tensor with these dimensions, saturating at UINT64_MAX.
static uint64_t elements(std::initializer_list<int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims)
    n = SaturatingMultiply(n, uint64_t(std::max<int64_t>(d, 0)));
  return n;
}

/// "2^45 (35184372088832)"-style limits in the messages.
static std::string limitText(int64_t limit) {
  return "2^" + std::to_string(Log2_64(uint64_t(limit))) + " (" +
         std::to_string(limit) + ")";
}

/// Records an error on `key` when `what` ([dims] = `formula`) holds more
/// than kMaxTensorElements elements.
static void checkTensor(JsonFieldReader &fields, StringRef key, int64_t value,
                        StringRef what, StringRef formula,
                        std::initializer_list<int64_t> dims) {
  uint64_t n = elements(dims);
  if (n <= uint64_t(kMaxTensorElements))
    return;
  fields.fail(key, "is " + Twine(value) + ": " + what + " (" + formula +
                       ") would hold " +
                       (n == UINT64_MAX ? std::string("over 2^64")
                                        : std::to_string(n)) +
                       " elements, over the limit of " +
                       limitText(kMaxTensorElements) +
                       " elements per tensor; lower " + key);
}

/// The parameter tensors and the whole parameter count of `config`, whose
/// fields are within their per-field limits.
static void checkParameterSizes(JsonFieldReader &fields,
                                const ModelConfig &c) {
  bool gpt2 = c.family == ModelFamily::Gpt2;
  StringRef vocab = "vocab_size", hidden = gpt2 ? "n_embd" : "hidden_size";
  StringRef layers = gpt2 ? "n_layer" : "num_hidden_layers";
  checkTensor(fields, vocab, c.vocabSize, "the token embedding",
              (vocab + " x " + hidden).str(), {c.vocabSize, c.hiddenSize});
  if (gpt2) {
    checkTensor(fields, "n_positions", c.maxPositions,
                "the position embedding", "n_positions x n_embd",
                {c.maxPositions, c.hiddenSize});
    checkTensor(fields, hidden, c.hiddenSize, "attn.c_attn.weight",
                "n_embd x 3 * n_embd", {c.hiddenSize, 3, c.hiddenSize});
  } else {
    checkTensor(fields, hidden, c.hiddenSize, "self_attn.q_proj.weight",
                "hidden_size x hidden_size", {c.hiddenSize, c.hiddenSize});
  }
  if (!gpt2)
    checkTensor(fields, "intermediate_size", c.intermediateSize,
                "mlp.up_proj.weight", "intermediate_size x hidden_size",
                {c.intermediateSize, c.hiddenSize});
  else if (fields.has("n_inner"))
    checkTensor(fields, "n_inner", c.intermediateSize, "mlp.c_fc.weight",
                "n_embd x n_inner", {c.hiddenSize, c.intermediateSize});
  else
    checkTensor(fields, "n_embd", c.hiddenSize, "mlp.c_fc.weight",
                "n_embd x 4 * n_embd", {c.hiddenSize, c.intermediateSize});
  if (fields.failed())
    return;
  uint64_t total = 0;
  for (const ParamSpec &spec : parameterSpecs(c)) {
    uint64_t n = 1;
    for (int64_t d : spec.shape)
      n = SaturatingMultiply(n, uint64_t(d));
    total = SaturatingAdd(total, n);
  }
  if (total > uint64_t(kMaxParameters))
    fields.fail(layers, "is " + Twine(c.numLayers) + ": the model would have " +
                            Twine(total) + " parameters, over the limit of " +
                            limitText(kMaxParameters) +
                            "; lower " + layers + " or the layer sizes");
}

/// GPT-2 fields, with Hugging Face's GPT2Config defaults for the optional ones.
static ModelConfig readGpt2(JsonFieldReader &fields) {
  ModelConfig config;
  config.family = ModelFamily::Gpt2;
  config.vocabSize = fields.requiredInt("vocab_size", 1, kMaxDimension);
  config.maxPositions = fields.requiredInt("n_positions", 1, kMaxDimension);
  config.hiddenSize = fields.requiredInt("n_embd", 1, kMaxDimension);
  config.numLayers = fields.requiredInt("n_layer", 1, kMaxLayers, kLayersWhy);
  config.numHeads = fields.requiredInt("n_head", 1, kMaxDimension);
  config.numKvHeads = config.numHeads;
  config.intermediateSize =
      fields.optionalInt("n_inner", 4 * config.hiddenSize, 1, kMaxDimension);
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
  config.vocabSize = fields.requiredInt("vocab_size", 1, kMaxDimension);
  config.hiddenSize = fields.requiredInt("hidden_size", 1, kMaxDimension);
  config.intermediateSize =
      fields.requiredInt("intermediate_size", 1, kMaxDimension);
  config.numLayers =
      fields.requiredInt("num_hidden_layers", 1, kMaxLayers, kLayersWhy);
  config.numHeads = fields.requiredInt("num_attention_heads", 1, kMaxDimension);
  config.numKvHeads = fields.optionalInt("num_key_value_heads", config.numHeads,
                                         1, kMaxDimension);
  config.maxPositions =
      fields.optionalInt("max_position_embeddings", 2048, 1, kMaxDimension);
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
  if (!fields.failed())
    checkParameterSizes(fields, config);
  if (Error error = fields.takeError())
    return std::move(error);
  return config;
}

Error mlir::tg::frontend::checkGraphSizes(const ModelConfig &c, int64_t batch,
                                          int64_t seqLen, StringRef trainPath) {
  bool gpt2 = c.family == ModelFamily::Gpt2;
  std::string vocab = "vocab_size";
  std::string heads = gpt2 ? "n_head" : "num_attention_heads";
  std::string hidden = gpt2 ? "n_embd" : "hidden_size";
  std::string inner = gpt2 ? "n_inner" : "intermediate_size";
  std::string b = trainPath.empty() ? "--batch" : "micro-batch";
  std::string t = trainPath.empty() ? "--seq" : "seq_len";
  struct Tensor {
    const char *what;
    std::vector<std::pair<std::string, int64_t>> dims;
  };
  bool mlpIsWidest = c.intermediateSize >= 3 * c.hiddenSize;
  Tensor tensors[] = {
      {"the logits", {{b, batch}, {t, seqLen}, {vocab, c.vocabSize}}},
      {"the attention scores",
       {{b, batch}, {heads, c.numHeads}, {t, seqLen}, {t, seqLen}}},
      {"the widest activation",
       {{b, batch},
        {t, seqLen},
        mlpIsWidest ? std::pair<std::string, int64_t>{inner, c.intermediateSize}
                    : std::pair<std::string, int64_t>{"3 * " + hidden,
                                                      3 * c.hiddenSize}}}};
  for (const Tensor &tensor : tensors) {
    uint64_t n = 1;
    std::string names, values;
    for (auto &[name, value] : tensor.dims) {
      n = SaturatingMultiply(n, uint64_t(std::max<int64_t>(value, 0)));
      names += (names.empty() ? "" : " x ") + name;
      values += (values.empty() ? "" : " x ") + std::to_string(value);
    }
    if (n <= uint64_t(kMaxTensorElements))
      continue;
    std::string count =
        n == UINT64_MAX ? std::string("over 2^64") : std::to_string(n);
    std::string problem = std::string(tensor.what) + " (" + names + " = " +
                          values + ") would hold " + count +
                          " elements, over the limit of " +
                          limitText(kMaxTensorElements) +
                          " elements per tensor";
    if (trainPath.empty())
      return createStringError(inconvertibleErrorCode(),
                               "--batch %lld and --seq %lld: %s; lower them",
                               (long long)batch, (long long)seqLen,
                               problem.c_str());
    return createStringError(
        inconvertibleErrorCode(),
        "%s: field 'batch_size': a micro-batch of %lld sequences of seq_len "
        "%lld: %s; lower batch_size or seq_len, or raise micro_batches",
        trainPath.str().c_str(), (long long)batch, (long long)seqLen,
        problem.c_str());
  }
  return Error::success();
}
