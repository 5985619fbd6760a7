// Token data: a stream of token ids, read in place from a read-only memory
// mapping (the data can be far larger than memory needs to hold at once).
// Flat little-endian uint16 or uint32 files are the stream; of Megatron-LM's
// indexed dataset (PREFIX.bin + PREFIX.idx, tg/runtime/MegatronIndex.h) the
// stream is its sequences, concatenated in order.
#include "Session.h"
#include "Status.h"
#include "tg/runtime/MegatronIndex.h"
#include "tg/runtime/RegularFile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

/// A whole regular file, mapped read-only.
class Mapping {
public:
  Mapping() = default;
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  ~Mapping() {
    if (data)
      ::munmap(const_cast<uint8_t *>(data), bytes);
  }

  /// Maps `path`, a regular file; an empty one maps to nothing. `what`
  /// names it in messages ("the token file").
  bool map(const std::string &path, const char *what, std::string &error) {
    struct stat st;
    std::string problem;
    int fd = tg::runtime::openRegularFile(path, st, problem);
    if (fd < 0) {
      error = path + ": cannot open " + what + " (" + problem + "); check the path";
      return false;
    }
    bytes = static_cast<std::size_t>(st.st_size);
    void *map = bytes ? ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    int mapErrno = errno;
    ::close(fd);
    if (map == MAP_FAILED) {
      bytes = 0;
      error = path + ": cannot map " + what + " (" + std::strerror(mapErrno) + ")";
      return false;
    }
    data = static_cast<const uint8_t *>(map);
    return true;
  }

  const uint8_t *data = nullptr;
  std::size_t bytes = 0;
};

} // namespace

struct tg_dataset_s {
  std::string path; // the token file, or Megatron's .bin, for messages
  tg_data_format format = TG_DATA_UINT16;
  Mapping tokens;
  int tokenBytes = 2;
  bool signedTokens = false; // Megatron's int32
  int64_t numTokens = 0, numDocuments = 0;

  int64_t token(uint64_t i) const {
    const uint8_t *at = tokens.data + i * uint64_t(tokenBytes);
    if (tokenBytes == 2)
      return at[0] | at[1] << 8;
    uint32_t word = uint32_t(at[0]) | uint32_t(at[1]) << 8 | uint32_t(at[2]) << 16 |
                    uint32_t(at[3]) << 24;
    return signedTokens ? int64_t(int32_t(word)) : int64_t(word);
  }
};

namespace tg::runtime {
namespace {

const char *formatName(tg_data_format format) {
  switch (format) {
  case TG_DATA_UINT16: return "uint16";
  case TG_DATA_UINT32: return "uint32";
  case TG_DATA_MEGATRON: return "megatron";
  }
  return "?";
}

bool openFlat(tg_dataset &dataset, std::string &error) {
  const std::string &path = dataset.path;
  const int width = dataset.tokenBytes;
  if (!dataset.tokens.map(path, "the token file", error))
    return false;
  const std::string kind = std::string("a flat array of little-endian ") +
                           formatName(dataset.format) + " token ids";
  if (dataset.tokens.bytes == 0) {
    error = path + ": is empty; pass a token file (" + kind + ")";
    return false;
  }
  if (dataset.tokens.bytes % std::size_t(width) != 0) {
    error = path + ": holds " + std::to_string(dataset.tokens.bytes) +
            " bytes, not a whole number of " + std::to_string(width) +
            "-byte tokens; a token file is " + kind + ", re-write it" +
            (width == 4 ? " (or is it uint16? --data-format uint16)" : "");
    return false;
  }
  dataset.numTokens = int64_t(dataset.tokens.bytes / std::size_t(width));
  return true;
}

/// PREFIX of PREFIX, PREFIX.bin or PREFIX.idx.
std::string megatronPrefix(const std::string &path) {
  for (const char *suffix : {".bin", ".idx"})
    if (path.size() > 4 && path.compare(path.size() - 4, 4, suffix) == 0)
      return path.substr(0, path.size() - 4);
  return path;
}

bool openMegatron(tg_dataset &dataset, const std::string &path, std::string &error) {
  const std::string prefix = megatronPrefix(path);
  MegatronIndex index;
  {
    Mapping idx;
    if (!idx.map(prefix + ".idx", "the Megatron index", error) ||
        !parseMegatronIndex(idx.data, idx.bytes, prefix + ".idx", index, error))
      return false;
  }
  dataset.path = prefix + ".bin";
  dataset.tokenBytes = index.tokenBytes;
  dataset.signedTokens = index.signedTokens;
  if (!dataset.tokens.map(dataset.path, "the Megatron data file", error))
    return false;
  uint64_t expected = index.tokens * uint64_t(index.tokenBytes);
  if (dataset.tokens.bytes != expected) {
    error = dataset.path + ": holds " + std::to_string(dataset.tokens.bytes) +
            " bytes, but " + prefix + ".idx describes " + std::to_string(index.tokens) +
            " tokens of " + std::to_string(index.tokenBytes) + " bytes (" +
            std::to_string(expected) + "); the two files do not belong together, or one is "
            "truncated";
    return false;
  }
  if (index.tokens == 0) {
    error = prefix + ".idx: holds no tokens; pass a dataset with documents";
    return false;
  }
  dataset.numTokens = int64_t(index.tokens);
  dataset.numDocuments = int64_t(index.documents);
  return true;
}

bool open(const std::string &path, tg_data_format format, tg_dataset **out,
          std::string &error) {
  if (format != TG_DATA_UINT16 && format != TG_DATA_UINT32 && format != TG_DATA_MEGATRON) {
    error = "tg_dataset_open_format: format " + std::to_string(int(format)) +
            " is not TG_DATA_UINT16, TG_DATA_UINT32 or TG_DATA_MEGATRON";
    return false;
  }
  auto dataset = std::make_unique<tg_dataset>();
  dataset->path = path;
  dataset->format = format;
  dataset->tokenBytes = format == TG_DATA_UINT32 ? 4 : 2;
  if (format == TG_DATA_MEGATRON ? !openMegatron(*dataset, path, error)
                                 : !openFlat(*dataset, error))
    return false;
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
  // Ids past 65,535 cannot be stored in 16 bits: such a file cannot hold
  // this model's data, whatever its tokens look like.
  if (dataset.tokenBytes == 2 && vocabSize > 65535) {
    error = dataset.path + ": holds uint16 token ids, but the vocabulary has " +
            std::to_string(vocabSize) + " tokens (above 65,535, the most 16 bits can " +
            "address); write the tokens as uint32 (scripts/pack-tokens --format uint32, or " +
            "Megatron's int32)";
    return false;
  }
  int64_t n = dataset.numTokens;
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
      int64_t token = dataset.token(o + j);
      if (token < 0 || token >= vocabSize) {
        error = dataset.path + ": token " + std::to_string(token) + " at position " +
                std::to_string(o + j) + " (byte offset " +
                std::to_string(uint64_t(dataset.tokenBytes) * (o + j)) +
                ") is not a token id below the vocabulary size " + std::to_string(vocabSize) +
                "; tokenize the data with the model's tokenizer";
        return false;
      }
      if (j < seqLen)
        tokens[i * seqLen + j] = int32_t(token);
      if (j > 0)
        targets[i * seqLen + j - 1] = int32_t(token);
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
           tg::runtime::open(path, TG_DATA_UINT16, out, error);
  });
}

tg_status tg_dataset_open_format(const char *path, tg_data_format format, tg_dataset **out) {
  return guarded("tg_dataset_open_format", [&](std::string &error) {
    return requireArgument(path, "tg_dataset_open_format", "path", error) &&
           requireArgument(out, "tg_dataset_open_format", "out", error) &&
           tg::runtime::open(path, format, out, error);
  });
}

int tg_dataset_token_bytes(const tg_dataset *dataset) { return dataset->tokenBytes; }

int64_t tg_dataset_num_documents(const tg_dataset *dataset) { return dataset->numDocuments; }

void tg_dataset_close(tg_dataset *dataset) { delete dataset; }

int64_t tg_dataset_num_tokens(const tg_dataset *dataset) { return dataset->numTokens; }

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
