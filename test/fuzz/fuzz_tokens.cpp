// Fuzz target: token files (runtime/api/Dataset.cpp, through the C API).
// The input is the file (flat little-endian uint16); its first bytes also
// choose the batch asked for, so that steps, batch sizes, sequence lengths
// and vocabulary sizes vary with it, huge steps included.
#include "FuzzSupport.h"

#include "tg/runtime/tg_runtime.h"

#include <cstring>
#include <limits>
#include <vector>

namespace {

uint64_t readLe(const uint8_t *data, size_t size, size_t offset, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes && offset + i < size; ++i)
    value |= uint64_t(data[offset + i]) << (8 * i);
  return value;
}

/// Mappings of the memfd in this process (/proc/self/maps names it
/// "/memfd:tokens.bin (deleted)"): none may remain once a dataset is closed
/// or failed to open.
int mappingsOf(const char *name) {
  std::FILE *maps = std::fopen("/proc/self/maps", "r");
  if (!maps)
    return 0;
  int count = 0;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps))
    if (std::strstr(line, name))
      ++count;
  std::fclose(maps);
  return count;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tg::fuzz::MemFile file("tokens.bin");
  file.write(data, size);
  tg_dataset *dataset = nullptr;
  if (tg_status status = tg_dataset_open(file.filePath().c_str(), &dataset)) {
    if (!tg_status_message(status) || !*tg_status_message(status))
      tg::fuzz::invariantFailed("a rejected token file without a message");
    tg_status_free(status);
    if (mappingsOf("memfd:tokens.bin"))
      tg::fuzz::invariantFailed("a token file that failed to open stays mapped");
    return 0;
  }
  if (tg_dataset_num_tokens(dataset) != int64_t(size / 2))
    tg::fuzz::invariantFailed("the token count is not the file size / 2");

  // Steps near the int64 limit (the modular arithmetic must not overflow),
  // small batches and sequences, any vocabulary size.
  uint64_t rawStep = readLe(data, size, 0, 8);
  int64_t steps[] = {0, 1, int64_t(rawStep >> 1), std::numeric_limits<int64_t>::max()};
  int64_t batchSize = 1 + int64_t(readLe(data, size, 8, 1) % 8);
  int64_t seqLen = 1 + int64_t(readLe(data, size, 9, 1) % 64);
  int64_t vocabSize = 1 + int64_t(readLe(data, size, 10, 2));
  std::vector<int32_t> tokens(batchSize * seqLen), targets(batchSize * seqLen);
  for (int64_t step : steps) {
    tg_status status = tg_dataset_batch(dataset, step, batchSize, seqLen, vocabSize,
                                        tokens.data(), targets.data());
    if (status) {
      tg_status_free(status);
      continue;
    }
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] < 0 || tokens[i] >= vocabSize || targets[i] < 0 ||
          targets[i] >= vocabSize)
        tg::fuzz::invariantFailed("a batch holds a token outside the vocabulary");
    for (int64_t b = 0; b < batchSize; ++b)
      for (int64_t j = 0; j + 1 < seqLen; ++j)
        if (targets[b * seqLen + j] != tokens[b * seqLen + j + 1])
          tg::fuzz::invariantFailed("targets are not the tokens shifted by one");
  }
  // Arguments the API must refuse, not trust.
  for (int64_t bad : {int64_t(0), int64_t(-1), std::numeric_limits<int64_t>::min()})
    if (tg_status status = tg_dataset_batch(dataset, bad, bad, bad, bad, tokens.data(),
                                            targets.data()))
      tg_status_free(status);
    else
      tg::fuzz::invariantFailed("a batch with sizes below 1 was accepted");
  tg_dataset_close(dataset);
  if (mappingsOf("memfd:tokens.bin"))
    tg::fuzz::invariantFailed("a closed token file stays mapped");
  return 0;
}
