// Fuzz target: the reader of Hugging Face's sharded-weights index
// (model.safetensors.index.json, runtime/formats). An accepted index maps
// every tensor to a plain file name beside it.
#include "FuzzSupport.h"

#include "tg/runtime/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<std::pair<std::string, std::string>> weightMap;
  std::string error;
  if (!tg::safetensors::parseIndex(text, "fuzz.index.json", weightMap, error)) {
    if (error.rfind("fuzz.index.json: ", 0) != 0)
      tg::fuzz::invariantFailed("a rejected index without a message naming it");
    return 0;
  }
  for (const auto &[tensor, file] : weightMap)
    if (file.empty() || file.find('/') != std::string::npos)
      tg::fuzz::invariantFailed("an accepted index names a file outside its directory");
  return 0;
}
