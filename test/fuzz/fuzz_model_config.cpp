// Fuzz target: the config.json reader (frontend parseModelConfig). The input
// is the file's contents; the reader takes a path, so it reads a memfd.
// Accepted configs must satisfy what the graph builders rely on.
#include "FuzzSupport.h"

#include "tg/Frontend/ModelConfig.h"

using namespace mlir::tg::frontend;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tg::fuzz::MemFile file("config.json");
  file.write(data, size);
  llvm::Expected<ModelConfig> config = parseModelConfig(file.filePath());
  if (!config) {
    std::string message = llvm::toString(config.takeError());
    if (message.empty())
      tg::fuzz::invariantFailed("an empty error message");
    return 0;
  }
  if (config->vocabSize < 1 || config->maxPositions < 1 || config->hiddenSize < 1 ||
      config->numLayers < 1 || config->numHeads < 1 || config->numKvHeads < 1 ||
      config->intermediateSize < 1)
    tg::fuzz::invariantFailed("an accepted config has a size below 1");
  if ((!config->explicitHeadDim && config->hiddenSize % config->numHeads != 0) ||
      config->headDim() < 1)
    tg::fuzz::invariantFailed("an accepted config has heads that do not divide the width");
  if (config->numHeads % config->numKvHeads != 0)
    tg::fuzz::invariantFailed("an accepted config has query heads that do not divide into "
                              "key/value heads");
  return 0;
}

// libMLIR.so is not instrumented, but LLVM's allocators are header templates
// that poison their free slab memory when compiled with AddressSanitizer: an
// instrumented copy that poisons, mixed with an uninstrumented one that does
// not unpoison, reports use-after-poison in correct code. User poisoning off.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }
