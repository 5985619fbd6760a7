// Token files: a flat array of little-endian uint16 tokens, mapped read-only
// (they can be far larger than memory needs to hold at once).
#include "Session.h"
#include "Status.h"
#include "tg/runtime/RegularFile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct tg_dataset_s {
  std::string path;
  const uint8_t *data = nullptr;
  std::size_t bytes = 0;

  ~tg_dataset_s() {
    if (data)
      ::munmap(const_cast<uint8_t *>(data), bytes);
  }
  int64_t numTokens() const { return static_cast<int64_t>(bytes / 2); }
  uint16_t token(uint64_t i) const { return uint16_t(data[2 * i] | data[2 * i + 1] << 8); }
};

namespace tg::runtime {
namespace {

bool open(const std::string &path, tg_dataset **out, std::string &error) {
  auto fail = [&](const std::string &problem) {
    error = path + ": " + problem;
    return false;
  };
  struct stat st;
  std::string problem;
  int fd = openRegularFile(path, st, problem);
  if (fd < 0)
    return fail("cannot open the token file (" + problem + "); check the path");
  auto dataset = std::make_unique<tg_dataset>();
  dataset->path = path;
  dataset->bytes = static_cast<std::size_t>(st.st_size);
  // The size is checked before mapping, so a rejected file leaves no
  // mapping behind.
  if (dataset->bytes == 0 || dataset->bytes % 2 != 0)
    ::close(fd);
  if (dataset->bytes == 0)
    return fail("is empty; pass a token file (flat little-endian uint16)");
  if (dataset->bytes % 2 != 0)
    return fail("has an odd number of bytes (" + std::to_string(dataset->bytes) +
                "); a token file is a flat array of little-endian uint16, re-write it");
  void *map = ::mmap(nullptr, dataset->bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  int mapErrno = errno;
  ::close(fd);
  if (map == MAP_FAILED)
    return fail(std::string("cannot map the token file (") + std::strerror(mapErrno) + ")");
  dataset->data = static_cast<const uint8_t *>(map);
  *out = dataset.release();
  return true;
}

/// (a * b) mod m without overflow.
uint64_t mulMod(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>((unsigned __int128)(a % m) * (b % m) % m);
}

bool batch(const tg_dataset &dataset, int64_t step, int64_t batchSize, int64_t seqLen,
           int64_t vocabSize, int32_t *tokens, int32_t *targets, std::string &error) {
  if (step < 0 || batchSize < 1 || seqLen < 1 || vocabSize < 1) {
    error = "tg_dataset_batch: step must be >= 0 and batch_size, seq_len, vocab_size >= 1";
    return false;
  }
  int64_t n = dataset.numTokens();
  if (n <= seqLen) {
    error = dataset.path + ": holds " + std::to_string(n) + " tokens, but a sample needs " +
            std::to_string(seqLen + 1) + " (seq_len + 1); pass a larger token file";
    return false;
  }
  uint64_t span = uint64_t(n - seqLen);
  for (int64_t i = 0; i < batchSize; ++i) {
    // o = ((s*B + i)*T) mod (N - T), per the data contract.
    uint64_t sample = (mulMod(uint64_t(step), uint64_t(batchSize), span) + uint64_t(i)) % span;
    uint64_t o = mulMod(sample, uint64_t(seqLen), span);
    for (int64_t j = 0; j <= seqLen; ++j) {
      uint16_t token = dataset.token(o + j);
      if (token >= vocabSize) {
        error = dataset.path + ": token " + std::to_string(token) + " at position " +
                std::to_string(o + j) + " (byte offset " + std::to_string(2 * (o + j)) +
                ") is not below the vocabulary size " + std::to_string(vocabSize) +
                "; tokenize the data with the model's tokenizer";
        return false;
      }
      if (j < seqLen)
        tokens[i * seqLen + j] = token;
      if (j > 0)
        targets[i * seqLen + j - 1] = token;
    }
  }
  return true;
}

} // namespace
} // namespace tg::runtime

using namespace tg::runtime;

extern "C" {

tg_status tg_dataset_open(const char *path, tg_dataset **out) {
  return guarded("tg_dataset_open", [&](std::string &error) {
    return requireArgument(path, "tg_dataset_open", "path", error) &&
           requireArgument(out, "tg_dataset_open", "out", error) &&
           tg::runtime::open(path, out, error);
  });
}

void tg_dataset_close(tg_dataset *dataset) { delete dataset; }

int64_t tg_dataset_num_tokens(const tg_dataset *dataset) { return dataset->numTokens(); }

tg_status tg_dataset_batch(const tg_dataset *dataset, int64_t step, int64_t batch_size,
                           int64_t seq_len, int64_t vocab_size, int32_t *tokens,
                           int32_t *targets) {
  return guarded("tg_dataset_batch", [&](std::string &error) {
    return requireArgument(dataset, "tg_dataset_batch", "dataset", error) &&
           requireArgument(tokens, "tg_dataset_batch", "tokens", error) &&
           requireArgument(targets, "tg_dataset_batch", "targets", error) &&
           batch(*dataset, step, batch_size, seq_len, vocab_size, tokens, targets, error);
  });
}

}
