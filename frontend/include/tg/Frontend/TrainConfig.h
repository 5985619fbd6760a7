#ifndef TG_FRONTEND_TRAINCONFIG_H
#define TG_FRONTEND_TRAINCONFIG_H

#include "tg/Frontend/ModelConfig.h"
#include "tg/Passes/TrainStep.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::tg::frontend {

enum class Precision { Fp32, Bf16 };

/// A TRAIN.json: the training step's options (global batch, micro-batches,
/// AdamW, clipping, schedule), plus what the frontend and the lowering use.
struct TrainConfig {
  TrainStepOptions step;
  int64_t seed = 0;
  Precision precision = Precision::Fp32;
};

/// Size limits of a TRAIN.json (see kMaxTensorElements in ModelConfig.h);
/// seq_len is at most kMaxDimension. checkGraphSizes checks the tensors the
/// micro-batch makes with the model's sizes.
inline constexpr int64_t kMaxBatchSize = int64_t(1) << 24;
inline constexpr int64_t kMaxMicroBatches = 1024;

/// Reads and validates a TRAIN.json: `text` when given (called `path` in
/// messages), else the file at `path`. Errors name the file and the field.
llvm::Expected<TrainConfig>
parseTrainConfig(llvm::StringRef path,
                 std::optional<llvm::StringRef> text = std::nullopt);

} // namespace mlir::tg::frontend

#endif
