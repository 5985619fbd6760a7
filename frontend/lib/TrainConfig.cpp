#include "tg/Frontend/TrainConfig.h"
#include "tg/Frontend/JsonFieldReader.h"

using namespace llvm;
using namespace mlir::tg::frontend;

static void readOptimizer(JsonFieldReader fields, TrainConfig &config) {
  fields.rejectUnknownKeys({"type", "lr", "betas", "eps", "weight_decay"});
  std::string type = fields.optionalString("type", "adamw");
  if (type != "adamw")
    fields.fail("type", "'" + type + "' is not supported; use \"adamw\"");
  config.step.lr = fields.requiredNumber("lr", 0, /*minExclusive=*/true);
  config.step.eps = fields.optionalNumber("eps", config.step.eps, 0, /*minExclusive=*/true);
  config.step.weightDecay =
      fields.optionalNumber("weight_decay", config.step.weightDecay, 0, false);
  if (const json::Value *betas = fields.raw("betas")) {
    const json::Array *pair = betas->getAsArray();
    std::optional<double> b1, b2;
    if (pair && pair->size() == 2) {
      b1 = (*pair)[0].getAsNumber();
      b2 = (*pair)[1].getAsNumber();
    }
    if (!b1 || !b2 || *b1 < 0 || *b1 >= 1 || *b2 < 0 || *b2 >= 1)
      fields.fail("betas", "expected [beta1, beta2] with 0 <= beta < 1");
    else {
      config.step.beta1 = *b1;
      config.step.beta2 = *b2;
    }
  }
}

static void readSchedule(JsonFieldReader &top, TrainConfig &config) {
  const json::Value *raw = top.raw("lr_schedule");
  if (!raw)
    return;
  // "constant" is accepted as a bare string too.
  if (std::optional<StringRef> name = raw->getAsString()) {
    if (*name != "constant")
      top.fail("lr_schedule", "a bare string must be \"constant\"; cosine "
                              "needs {\"type\": \"cosine\", \"warmup_steps\", "
                              "\"min_lr\", \"decay_steps\"}");
    return;
  }
  JsonFieldReader fields = top.object("lr_schedule", /*required=*/true);
  std::string type = fields.requiredString("type");
  if (type == "constant") {
    fields.rejectUnknownKeys({"type"});
    return;
  }
  if (type != "cosine") {
    fields.fail("type", "'" + type + "' is not supported; use \"constant\" "
                                     "or \"cosine\"");
    return;
  }
  fields.rejectUnknownKeys({"type", "warmup_steps", "min_lr", "decay_steps"});
  config.step.schedule = mlir::tg::LrSchedule::Cosine;
  config.step.warmupSteps = fields.optionalInt("warmup_steps", 0, 0);
  config.step.minLr = fields.optionalNumber("min_lr", 0, 0, false);
  config.step.decaySteps = fields.requiredInt("decay_steps", 1);
  if (config.step.minLr > config.step.lr)
    fields.fail("min_lr", "is " + formatNumber(config.step.minLr) +
                              ", must not exceed optimizer.lr (" +
                              formatNumber(config.step.lr) + ")");
}

Expected<TrainConfig>
mlir::tg::frontend::parseTrainConfig(StringRef path,
                                     std::optional<StringRef> text) {
  Expected<json::Value> json = JsonFieldReader::parseFile(path, text);
  if (!json)
    return json.takeError();
  JsonFieldReader fields(path.str(), json->getAsObject());
  fields.rejectUnknownKeys({"batch_size", "seq_len", "seed", "precision",
                            "optimizer", "grad_clip_norm", "lr_schedule",
                            "micro_batches"});
  TrainConfig config;
  config.step.batchSize = fields.requiredInt("batch_size", 1, kMaxBatchSize);
  config.step.seqLen = fields.requiredInt("seq_len", 1, kMaxDimension);
  config.seed = fields.optionalInt("seed", 0, 0);
  config.step.microBatches = fields.optionalInt(
      "micro_batches", 1, 1, kMaxMicroBatches,
      "each micro-batch is its own copy of the forward and backward graph");
  std::string precision = fields.optionalString("precision", "fp32");
  if (precision == "bf16")
    config.precision = Precision::Bf16;
  else if (precision != "fp32")
    fields.fail("precision",
                "'" + precision + "' is not supported; use \"fp32\" or \"bf16\"");
  readOptimizer(fields.object("optimizer", /*required=*/true), config);
  if (fields.has("grad_clip_norm"))
    config.step.gradClipNorm =
        fields.optionalNumber("grad_clip_norm", 0, 0, /*minExclusive=*/true);
  readSchedule(fields, config);
  if (config.step.batchSize % config.step.microBatches != 0)
    fields.fail("micro_batches", "batch_size (" + Twine(config.step.batchSize) +
                                     ") must be divisible by micro_batches (" +
                                     Twine(config.step.microBatches) + ")");
  if (Error error = fields.takeError())
    return std::move(error);
  return config;
}
