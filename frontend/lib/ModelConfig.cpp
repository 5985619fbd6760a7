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
                "num_attention_heads * head_dim x hidden_size",
                {c.numHeads, c.headDim(), c.hiddenSize});
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

/// Keys of Hugging Face's PretrainedConfig (and its generation settings)
/// that do not change what a training step computes: ids, names, dtypes,
/// generation and output options, task heads. Accepted quietly.
static constexpr StringRef kHarmlessKeys[] = {
    "model_type", "architectures", "torch_dtype", "dtype",
    "transformers_version", "use_cache", "bos_token_id", "eos_token_id",
    "pad_token_id", "sep_token_id", "decoder_start_token_id",
    "_name_or_path", "name_or_path", "output_attentions",
    "output_hidden_states", "return_dict", "use_return_dict", "id2label",
    "label2id", "num_labels", "problem_type", "tokenizer_class", "prefix",
    "task_specific_params", "finetuning_task", "torchscript", "use_bfloat16",
    "is_decoder", "tie_encoder_decoder", "chunk_size_feed_forward",
    "tf_legacy_loss", "attn_implementation", "_attn_implementation",
    "_attn_implementation_autoset", "cross_attention_hidden_size",
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
    "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p",
    "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
    "num_return_sequences", "output_scores", "return_dict_in_generate",
    "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens",
    "begin_suppress_tokens"};

/// Keys every family reads: the initialisation's std and the PretrainedConfig
/// switches that would change the model (refused unless off).
static void readCommon(JsonFieldReader &fields, ModelConfig &config) {
  config.initializerRange =
      fields.optionalNumber("initializer_range", 0.02, 0, /*minExclusive=*/true);
  if (fields.optionalBool("is_encoder_decoder", false))
    fields.fail("is_encoder_decoder",
                "is true: TGC builds decoder-only language models; set it to "
                "false");
  if (fields.optionalBool("add_cross_attention", false))
    fields.fail("add_cross_attention",
                "is true: cross-attention layers are not supported; set it to "
                "false");
  if (const json::Value *pruned = fields.raw("pruned_heads")) {
    const json::Object *object = pruned->getAsObject();
    if (!object || !object->empty())
      fields.fail("pruned_heads",
                  "pruned heads are not supported (every layer keeps all its "
                  "heads); remove it or make it {}");
  }
}

/// Records an error for a dropout probability above zero: the step has no
/// dropout. Absent keys count as 0, not as Hugging Face's defaults.
static void refuseDropout(JsonFieldReader &fields, StringRef key) {
  double p = fields.optionalNumber(key, 0.0, 0.0, /*minExclusive=*/false);
  if (p > 0)
    fields.fail(key, "is " + formatNumber(p) +
                         ": TGC trains without dropout; set it to 0 (0.0 is "
                         "supported)");
}

/// Warnings for the keys of `fields` outside `used` and kHarmlessKeys.
static void warnUnknown(JsonFieldReader &fields, ModelConfig &config,
                        ArrayRef<StringRef> used, StringRef family) {
  std::vector<StringRef> known(used.begin(), used.end());
  known.insert(known.end(), std::begin(kHarmlessKeys), std::end(kHarmlessKeys));
  for (const std::string &key : fields.keysOutside(known))
    config.warnings.push_back(fields.describe(
        key, "unknown to TGC's " + family +
                 " reader, ignored (if it changes the model, the step will "
                 "differ from Hugging Face's)"));
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
  config.scaleAttnWeights = fields.optionalBool("scale_attn_weights", true);
  config.scaleAttnByInverseLayerIdx =
      fields.optionalBool("scale_attn_by_inverse_layer_idx", false);
  config.reorderAndUpcastAttn =
      fields.optionalBool("reorder_and_upcast_attn", false);
  for (StringRef key : {"resid_pdrop", "embd_pdrop", "attn_pdrop"})
    refuseDropout(fields, key);
  readCommon(fields, config);
  warnUnknown(fields, config,
              {"vocab_size", "n_positions", "n_embd", "n_layer", "n_head",
               "n_inner", "layer_norm_epsilon", "tie_word_embeddings",
               "activation_function", "scale_attn_weights",
               "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
               "resid_pdrop", "embd_pdrop", "attn_pdrop", "initializer_range",
               "is_encoder_decoder", "add_cross_attention", "pruned_heads",
               // Unused by GPT2LMHeadModel: n_ctx (n_positions sets the
               // positions), the double-heads model's sequence summary.
               "n_ctx", "summary_type", "summary_use_proj",
               "summary_activation", "summary_proj_to_labels",
               "summary_first_dropout"},
              "gpt2");
  return config;
}

/// Llama's `rope_scaling` (null or absent: none). Hugging Face takes the
/// type from "rope_type" or, in older files, "type".
static void readRopeScaling(JsonFieldReader &fields, ModelConfig &config) {
  if (!fields.has("rope_scaling"))
    return;
  JsonFieldReader scaling = fields.object("rope_scaling", /*required=*/false);
  if (fields.failed())
    return;
  StringRef typeKey = scaling.has("rope_type") ? "rope_type" : "type";
  if (!scaling.has(typeKey)) {
    fields.fail("rope_scaling", "has no rope_type; use {\"rope_type\": "
                                "\"linear\", \"factor\": F} or Llama 3.1's "
                                "{\"rope_type\": \"llama3\", ...}");
    return;
  }
  std::string type = scaling.requiredString(typeKey);
  if (scaling.has("rope_type") && scaling.has("type")) {
    std::string other = scaling.optionalString("type", "");
    if (other != type)
      scaling.fail("type", "is '" + other + "' but rope_type is '" + type +
                               "'; give one of them");
  }
  if (fields.failed())
    return;
  if (type == "default") {
    scaling.rejectUnknownKeys({"rope_type", "type"});
    return;
  }
  if (type == "linear") {
    config.ropeScaling = ModelConfig::RopeScaling::Linear;
    config.ropeFactor =
        scaling.requiredNumber("factor", 0, /*minExclusive=*/true);
    scaling.rejectUnknownKeys({"rope_type", "type", "factor"});
    return;
  }
  if (type == "llama3") {
    config.ropeScaling = ModelConfig::RopeScaling::Llama3;
    config.ropeFactor =
        scaling.requiredNumber("factor", 0, /*minExclusive=*/true);
    config.ropeLowFreqFactor =
        scaling.requiredNumber("low_freq_factor", 0, /*minExclusive=*/true);
    config.ropeHighFreqFactor =
        scaling.requiredNumber("high_freq_factor", 0, /*minExclusive=*/true);
    config.ropeOriginalMaxPositions = scaling.requiredInt(
        "original_max_position_embeddings", 1, kMaxDimension);
    if (!fields.failed() &&
        config.ropeHighFreqFactor <= config.ropeLowFreqFactor)
      scaling.fail("high_freq_factor",
                   "is " + formatNumber(config.ropeHighFreqFactor) +
                       ", expected a number above low_freq_factor (" +
                       formatNumber(config.ropeLowFreqFactor) + ")");
    scaling.rejectUnknownKeys({"rope_type", "type", "factor",
                               "low_freq_factor", "high_freq_factor",
                               "original_max_position_embeddings"});
    return;
  }
  scaling.fail(typeKey, "'" + type +
                            "' is not supported; TGC implements the rope "
                            "types default, linear and llama3");
}

/// Qwen2's sliding-window attention, which TGC does not implement: refused
/// where a layer would use it (use_sliding_window, or a "sliding_attention"
/// layer type); the window's size alone changes nothing.
static void readQwen2Window(JsonFieldReader &fields) {
  if (fields.optionalBool("use_sliding_window", false))
    fields.fail("use_sliding_window",
                "is true: Qwen2's per-layer sliding window (max_window_layers) "
                "is not implemented; set it to false (every layer then attends "
                "to the whole prefix)");
  fields.optionalInt("sliding_window", 0, 0, kMaxDimension);
  fields.optionalInt("max_window_layers", 0, 0, kMaxLayers);
  if (const json::Value *types = fields.raw("layer_types")) {
    const json::Array *list = types->getAsArray();
    bool full = list != nullptr;
    for (const json::Value &t : list ? *list : json::Array())
      full &= t.getAsString() && *t.getAsString() == "full_attention";
    if (!full)
      fields.fail("layer_types",
                  "must list only \"full_attention\": per-layer "
                  "sliding-window attention is not implemented");
  }
}

/// The configs whose layers are Llama's.
enum class LlamaVariant { Llama, Qwen2, Mistral };

/// Llama fields, with Hugging Face's LlamaConfig defaults for the optional
/// ones; or, for Qwen2, Qwen2Config's: the same layers with biases on
/// q/k/v_proj, and sliding-window attention (refused) instead of
/// attention_bias, mlp_bias and pretraining_tp; or, for Mistral,
/// MistralConfig's: the same layers with a sliding attention window
/// (tg.attention's window on sequences longer than it).
static ModelConfig readLlama(JsonFieldReader &fields, LlamaVariant variant) {
  const bool qwen2 = variant == LlamaVariant::Qwen2;
  const bool mistral = variant == LlamaVariant::Mistral;
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
  config.maxPositions = fields.optionalInt(
      "max_position_embeddings", qwen2 ? 32768 : mistral ? 131072 : 2048, 1, kMaxDimension);
  config.normEpsilon =
      fields.optionalNumber("rms_norm_eps", 1e-6, 0, /*minExclusive=*/true);
  config.ropeTheta =
      fields.optionalNumber("rope_theta", 10000.0, 0, /*minExclusive=*/true);
  config.tieWordEmbeddings = fields.optionalBool("tie_word_embeddings", false);
  std::string activation = fields.optionalString("hidden_act", "silu");
  if (activation != "silu")
    fields.fail("hidden_act", "'" + activation +
                                  "' is not supported; Llama models use silu");
  config.explicitHeadDim = fields.optionalInt("head_dim", 0, 1, kMaxDimension);
  if (config.explicitHeadDim) {
    if (config.explicitHeadDim % 2 != 0)
      fields.fail("head_dim", "is " + Twine(config.explicitHeadDim) +
                                  ": the head dim must be even for RoPE");
  } else if (config.numHeads > 0 &&
             config.hiddenSize % config.numHeads != 0) {
    fields.fail("num_attention_heads",
                "hidden_size (" + Twine(config.hiddenSize) +
                    ") must be divisible by num_attention_heads (" +
                    Twine(config.numHeads) + "), or give head_dim");
  } else if (config.numHeads > 0 && config.headDim() % 2 != 0) {
    fields.fail("num_attention_heads",
                "the head dim hidden_size / num_attention_heads = " +
                    Twine(config.headDim()) + " must be even for RoPE");
  }
  if (qwen2) {
    config.qkvBias = true;
    readQwen2Window(fields);
  } else if (mistral) {
    // MistralConfig's default window is 4096; null means none.
    const json::Value *window = fields.raw("sliding_window");
    if (!window || window->kind() != json::Value::Null)
      config.slidingWindow = fields.optionalInt("sliding_window", 4096, 1, kMaxDimension);
  } else {
    config.qkvBias = config.outputBias = fields.optionalBool("attention_bias", false);
    config.mlpBias = fields.optionalBool("mlp_bias", false);
    // Hugging Face's pretraining_tp > 1 splits each projection into that
    // many slices and sums their products: the same function, other
    // rounding.
    fields.optionalInt("pretraining_tp", 1, 1, kMaxDimension);
  }
  refuseDropout(fields, "attention_dropout");
  double partial = fields.optionalNumber("partial_rotary_factor", 1.0, 0,
                                         /*minExclusive=*/true);
  if (partial != 1.0)
    fields.fail("partial_rotary_factor",
                "is " + formatNumber(partial) +
                    ": Llama rotates the whole head; only 1.0 is supported");
  if (fields.has("rope_parameters"))
    fields.fail("rope_parameters",
                "is not supported (transformers 5's form); give rope_theta "
                "and rope_scaling instead");
  readRopeScaling(fields, config);
  readCommon(fields, config);
  std::vector<StringRef> used = {
      "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
      "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
      "rms_norm_eps", "rope_theta", "tie_word_embeddings", "hidden_act",
      "head_dim", "attention_dropout", "partial_rotary_factor",
      "rope_parameters", "rope_scaling", "initializer_range",
      "is_encoder_decoder", "add_cross_attention", "pruned_heads"};
  if (qwen2)
    used.insert(used.end(), {"use_sliding_window", "sliding_window",
                             "max_window_layers", "layer_types"});
  else if (mistral)
    used.push_back("sliding_window");
  else
    used.insert(used.end(), {"attention_bias", "mlp_bias", "pretraining_tp"});
  warnUnknown(fields, config, used, qwen2 ? "qwen2" : mistral ? "mistral" : "llama");
  if (config.numKvHeads > 0 && config.numHeads % config.numKvHeads != 0)
    fields.fail("num_key_value_heads",
                "num_attention_heads (" + Twine(config.numHeads) +
                    ") must be divisible by num_key_value_heads (" +
                    Twine(config.numKvHeads) + ")");
  return config;
}

Expected<ModelConfig>
mlir::tg::frontend::parseModelConfig(StringRef path,
                                     std::optional<StringRef> text) {
  Expected<json::Value> json = JsonFieldReader::parseFile(path, text);
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
    config = readLlama(fields, LlamaVariant::Llama);
  else if (modelType == "qwen2")
    config = readLlama(fields, LlamaVariant::Qwen2);
  else if (modelType == "mistral")
    config = readLlama(fields, LlamaVariant::Mistral);
  else
    fields.fail("model_type", "'" + modelType +
                                  "' is not supported; use \"gpt2\", "
                                  "\"llama\", \"qwen2\" or \"mistral\"");
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
      {"the queries",
       {{b, batch},
        {t, seqLen},
        {heads, c.numHeads},
        {gpt2 || !c.explicitHeadDim ? hidden + " / " + heads : "head_dim",
         c.headDim()}}},
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
