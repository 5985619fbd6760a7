#ifndef TG_FRONTEND_TRAINCONFIG_H
#define TG_FRONTEND_TRAINCONFIG_H

#include "tg/Frontend/ModelConfig.h"
#include "tg/Passes/TrainStep.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::tg::frontend {

enum class Precision { Fp32, Bf16 };
enum class LrScheduleKind { Constant, Cosine };

/// A TRAIN.json: the global batch, the optimizer and its schedule.
struct TrainConfig {
  int64_t batchSize = 0; // global, in sequences
  int64_t seqLen = 0;
  int64_t seed = 0;
  Precision precision = Precision::Fp32;
  int64_t microBatches = 1;

  // AdamW, with torch.optim.AdamW semantics.
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;

  /// Global-norm clipping threshold; none when absent.
  std::optional<double> gradClipNorm;

  LrScheduleKind schedule = LrScheduleKind::Constant;
  int64_t warmupSteps = 0;
  double minLr = 0;
  /// Cosine only: steps from the end of warm-up until `minLr` is reached.
  int64_t decaySteps = 0;

  int64_t microBatchSize() const { return batchSize / microBatches; }
};

/// Size limits of a TRAIN.json (see kMaxTensorElements in ModelConfig.h);
/// seq_len is at most kMaxDimension. checkGraphSizes checks the tensors the
/// micro-batch makes with the model's sizes.
inline constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
inline constexpr int64_t kMaxMicroBatches = 1024;

/// Reads and validates a TRAIN.json. Errors name the file and the field.
llvm::Expected<TrainConfig> parseTrainConfig(llvm::StringRef path);

/// The options of tg-build-train-step (buildTrainStep) that `config` sets.
/// Seed and precision are not among them: the precision is the forward
/// graph's element type, the seed goes to the lowering.
TrainStepOptions trainStepOptions(const TrainConfig &config);

} // namespace mlir::tg::frontend

#endif
