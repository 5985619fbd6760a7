// Fuzz target: the TRAIN.json reader (frontend parseTrainConfig) and the
// train-step options it holds. The input is the file's contents; the
// reader takes a path, so it reads a memfd.
#include "FuzzSupport.h"

#include "tg/Frontend/TrainConfig.h"

#include <cmath>

using namespace mlir::tg::frontend;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tg::fuzz::MemFile file("TRAIN.json");
  file.write(data, size);
  llvm::Expected<TrainConfig> config = parseTrainConfig(file.filePath());
  if (!config) {
    std::string message = llvm::toString(config.takeError());
    if (message.empty())
      tg::fuzz::invariantFailed("an empty error message");
    return 0;
  }
  const mlir::tg::TrainStepOptions &step = config->step;
  if (step.batchSize < 1 || step.seqLen < 1 || step.microBatches < 1)
    tg::fuzz::invariantFailed("an accepted config has a size below 1");
  if (step.batchSize % step.microBatches != 0 || step.microBatchSize() < 1)
    tg::fuzz::invariantFailed("an accepted config has micro-batches that do not divide the batch");
  // Issue 8: infinite or NaN hyperparameters are errors.
  for (double value : {step.lr, step.beta1, step.beta2, step.eps, step.weightDecay, step.minLr,
                       step.gradClipNorm.value_or(1.0)})
    if (!std::isfinite(value))
      tg::fuzz::invariantFailed("an accepted config has a non-finite hyperparameter");
  return 0;
}

// libMLIR.so is not instrumented, but LLVM's allocators are header templates
// that poison their free slab memory when compiled with AddressSanitizer: an
// instrumented copy that poisons, mixed with an uninstrumented one that does
// not unpoison, reports use-after-poison in correct code. User poisoning off.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }
