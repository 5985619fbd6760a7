#include "tg/runtime/MegatronIndex.h"

#include <cstring>

namespace tg::runtime {
namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr std::size_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;
/// Far above any corpus (C4 is ~2^38 tokens), and far from overflow in
/// byte counts.
constexpr uint64_t kMaxTokens = uint64_t(1) << 50;

template <typename T> T readLe(const uint8_t *at) {
  T value; // the file and every target TGC runs on are little-endian
  std::memcpy(&value, at, sizeof(T));
  return value;
}

const char *dtypeName(uint8_t code) {
  switch (code) {
  case 1: return "uint8";
  case 2: return "int8";
  case 3: return "int16";
  case 4: return "int32";
  case 5: return "int64";
  case 6: return "float64";
  case 7: return "float32";
  case 8: return "uint16";
  default: return "unknown";
  }
}

} // namespace

bool parseMegatronIndex(const uint8_t *data, std::size_t size, const std::string &sourceName,
                        MegatronIndex &out, std::string &error) {
  auto fail = [&](const std::string &problem) {
    error = sourceName + ": " + problem;
    return false;
  };
  if (size < kHeaderBytes || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return fail("is not a Megatron-LM index (no MMIDIDX header); pass the .idx that "
                "Megatron's preprocess_data.py wrote beside the .bin");
  uint64_t version = readLe<uint64_t>(data + 9);
  if (version != 1)
    return fail("index version " + std::to_string(version) + " is not supported (only 1)");
  uint8_t code = data[17];
  if (code != 8 && code != 4)
    return fail("dtype code " + std::to_string(code) + " (" + dtypeName(code) +
                ") holds no token ids; Megatron writes tokens as uint16 (code 8) or int32 "
                "(code 4)");
  out.tokenBytes = code == 8 ? 2 : 4;
  out.signedTokens = code == 4;
  uint64_t sequences = readLe<uint64_t>(data + 18), entries = readLe<uint64_t>(data + 26);
  // The arrays take 12 bytes per sequence and 8 per document entry, plus
  // one per sequence in multimodal datasets.
  std::size_t body = size - kHeaderBytes;
  if (sequences > body / 12 || entries > body / 8 ||
      (body != 12 * sequences + 8 * entries && body != 13 * sequences + 8 * entries))
    return fail("holds " + std::to_string(size) + " bytes, which do not match its " +
                std::to_string(sequences) + " sequences and " + std::to_string(entries) +
                " document entries; the index is truncated or corrupt");
  const uint8_t *sizes = data + kHeaderBytes, *pointers = sizes + 4 * sequences,
                *documents = pointers + 8 * sequences;
  uint64_t tokens = 0;
  for (uint64_t i = 0; i < sequences; ++i) {
    int32_t length = readLe<int32_t>(sizes + 4 * i);
    int64_t pointer = readLe<int64_t>(pointers + 8 * i);
    if (length < 0)
      return fail("sequence " + std::to_string(i) + " has " + std::to_string(length) +
                  " tokens; the index is corrupt");
    if (pointer < 0 || uint64_t(pointer) != tokens * uint64_t(out.tokenBytes))
      return fail("sequence " + std::to_string(i) + " starts at byte " +
                  std::to_string(pointer) + " of the .bin, not right after the one before it (" +
                  std::to_string(tokens * uint64_t(out.tokenBytes)) +
                  "); TGC reads sequences stored one after another, as Megatron's builder "
                  "writes them");
    tokens += uint64_t(length);
    if (tokens > kMaxTokens)
      return fail("describes more than 2^50 tokens; the index is corrupt");
  }
  if (entries == 0 || readLe<int64_t>(documents) != 0 ||
      readLe<int64_t>(documents + 8 * (entries - 1)) != int64_t(sequences))
    return fail("the document index must run from 0 to the sequence count (" +
                std::to_string(sequences) + "); the index is corrupt");
  for (uint64_t i = 1; i < entries; ++i)
    if (readLe<int64_t>(documents + 8 * i) < readLe<int64_t>(documents + 8 * (i - 1)))
      return fail("document index entry " + std::to_string(i) +
                  " is below the one before it; the index is corrupt");
  out.sequences = sequences;
  out.documents = entries - 1;
  out.tokens = tokens;
  return true;
}

} // namespace tg::runtime
