// Fuzz target: the index of a Megatron-LM indexed dataset (PREFIX.idx,
// tg/runtime/MegatronIndex.h). A rejected index has a message naming it;
// an accepted one has a token width of 2 or 4 bytes, at most 2^50 tokens,
// and a length that its counts account for.
#include "FuzzSupport.h"

#include "tg/runtime/MegatronIndex.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg::runtime::MegatronIndex index;
  std::string error;
  if (!tg::runtime::parseMegatronIndex(data, size, "fuzz.idx", index, error)) {
    if (error.rfind("fuzz.idx: ", 0) != 0)
      tg::fuzz::invariantFailed("a rejected index without a message naming it");
    return 0;
  }
  if ((index.tokenBytes != 2 && index.tokenBytes != 4) || index.tokens > (uint64_t(1) << 50))
    tg::fuzz::invariantFailed("an accepted index with a bad token width or count");
  uint64_t arrays = 34 + 12 * index.sequences + 8 * (index.documents + 1);
  if (size != arrays && size != arrays + index.sequences)
    tg::fuzz::invariantFailed("an accepted index whose length its counts do not account for");
  return 0;
}
